import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

/**
 * The dashboard build: `npm run build:web` (run by `npm ci` through `prepare`) writes dist/web,
 * which erm3 serves under /app. Everything is bundled: no CDN, works offline.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/app/',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // Hashed file names: the HTML is revalidated, assets are cached forever.
    assetsDir: 'assets',
    sourcemap: false,
  },
})
