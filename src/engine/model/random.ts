/**
 * Seeded pseudo-random numbers for the synthetic market: sfc32 (Small Fast Counting, 128-bit
 * state; passes PractRand to many terabytes) seeded through splitmix32. Pure 32-bit integer
 * arithmetic, so a seed gives the same stream on every platform.
 */
export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number
  private spare = Number.NaN

  constructor(seed: number) {
    let s = seed >>> 0
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = next()
    this.b = next()
    this.c = next()
    this.d = next()
    for (let i = 0; i < 15; i++) this.u32()
  }

  /** A derived, independent stream (e.g. one per component), so adding draws in one part of the
   * generator does not shift every other part. */
  fork(label: number): Rng {
    return new Rng((this.u32() ^ Math.imul(label + 1, 0x27d4eb2f)) >>> 0)
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return t >>> 0
  }

  /** Uniform in [0, 1) with 53 random bits. */
  uniform(): number {
    return ((this.u32() >>> 5) * 67108864 + (this.u32() >>> 6)) / 9007199254740992
  }

  /** Uniform integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.uniform() * (hi - lo + 1))
  }

  /** Standard normal (Marsaglia polar method; the second value of each pair is kept). */
  normal(): number {
    if (!Number.isNaN(this.spare)) {
      const v = this.spare
      this.spare = Number.NaN
      return v
    }
    let u = 0
    let v = 0
    let s = 0
    // 32 random bits per coordinate are plenty for a normal deviate and halve the generator calls.
    do {
      u = (this.u32() + 0.5) * 4.656612873077393e-10 - 1
      v = (this.u32() + 0.5) * 4.656612873077393e-10 - 1
      s = u * u + v * v
    } while (s >= 1)
    const f = Math.sqrt((-2 * Math.log(s)) / s)
    this.spare = v * f
    return u * f
  }

  /** Student-t with `nu` degrees of freedom, scaled to unit variance (nu > 2, integer). */
  studentT(nu: number): number {
    let chi2 = 0
    for (let i = 0; i < nu; i++) {
      const z = this.normal()
      chi2 += z * z
    }
    return (this.normal() / Math.sqrt(chi2 / nu)) * Math.sqrt((nu - 2) / nu)
  }

  /** Log-normal with the given median and log-space standard deviation. */
  logNormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal())
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.uniform() * items.length)]
  }

  chance(p: number): boolean {
    return this.uniform() < p
  }
}
