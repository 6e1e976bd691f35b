//! Go's `math.Pow`, bit for bit, as the original's `{% calc %}` (and Pongo2's `^`) computes
//! it on linux/amd64.
//!
//! Go's `Pow` is not the C library's: for an integer exponent it multiplies successive
//! squarings of the base's mantissa (exponents kept apart with `Frexp`/`Ldexp`), so
//! `10 ** 23` is `99999999999999991611392` in Go where a correctly rounded power gives
//! `100000000000000008388608`. A fractional part of the exponent goes through Go's own
//! `Exp(yf * Log(x))`, which on amd64 are assembly routines: both are ported here too.
//!
//! Origin: the Go standard library, `src/math/pow.go`, `frexp.go`, `ldexp.go`, `modf.go`,
//! `exp_amd64.s` (its FMA path, taken on every x86-64 CPU with AVX and FMA, the servers the
//! original runs on) and `log_amd64.s`. Copyright The Go Authors, BSD-style licence. The
//! algorithms are re-written here in Rust; the operation order is Go's, so every rounding
//! is the same.

/// `x ** y` exactly as Go's `math.Pow(x, y)` gives it (special cases in Go's order: see
/// the Go documentation of `math.Pow`).
pub fn pow(x: f64, y: f64) -> f64 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if y == 1.0 {
        return x;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        let negative_odd = x.is_sign_negative() && is_odd_int(y);
        return if y < 0.0 {
            if negative_odd {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        } else if negative_odd {
            x
        } else {
            0.0
        };
    }
    if y.is_infinite() {
        return if x == -1.0 {
            1.0
        } else if (x.abs() < 1.0) == (y > 0.0) {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if x.is_infinite() {
        if x < 0.0 {
            // Pow(-Inf, y) = Pow(-0, -y)
            return pow(1.0 / x, -y);
        }
        return if y < 0.0 { 0.0 } else { f64::INFINITY };
    }
    if y == 0.5 {
        return x.sqrt();
    }
    if y == -0.5 {
        return 1.0 / x.sqrt();
    }

    let (mut yi, mut yf) = modf(y.abs());
    if yf != 0.0 && x < 0.0 {
        return f64::NAN;
    }
    if yi >= (1u64 << 63) as f64 {
        // yi is a large even integer: overflow or underflow for every x but -1.
        return if x == -1.0 {
            1.0
        } else if (x.abs() < 1.0) == (y > 0.0) {
            0.0
        } else {
            f64::INFINITY
        };
    }

    // ans = a1 * 2**ae (= 1 for now).
    let mut a1 = 1.0;
    let mut ae: i64 = 0;

    // ans *= x**yf
    if yf != 0.0 {
        if yf > 0.5 {
            yf -= 1.0;
            yi += 1.0;
        }
        a1 = exp(yf * log(x));
    }

    // ans *= x**yi, by multiplying in successive squarings of x according to the bits
    // of yi, the powers of two accumulated apart in ae.
    let (mut x1, mut xe) = frexp(x);
    // yi < 2**63 here: the conversion is exact.
    let mut i = yi as i64;
    while i != 0 {
        if !(-(1 << 12)..=(1 << 12)).contains(&xe) {
            // ae's lower bound is past a float64 exponent: Ldexp gives 0 or Inf.
            ae += xe;
            break;
        }
        if i & 1 == 1 {
            a1 *= x1;
            ae += xe;
        }
        x1 *= x1;
        xe <<= 1;
        if x1 < 0.5 {
            x1 += x1;
            xe -= 1;
        }
        i >>= 1;
    }

    // ans = a1 * 2**ae; if y < 0 { ans = 1 / ans }, in the opposite order.
    if y < 0.0 {
        a1 = 1.0 / a1;
        ae = -ae;
    }
    ldexp(a1, ae)
}

/// Go's `isOddInt`.
fn is_odd_int(x: f64) -> bool {
    if x.abs() >= (1u64 << 53) as f64 {
        // Past 2**53 every float64 is even.
        return false;
    }
    let (xi, xf) = modf(x);
    xf == 0.0 && (xi as i64) & 1 == 1
}

/// Go's `Modf` for the finite values `pow` passes: integer and fractional parts, both
/// with the sign of `f` (exact).
fn modf(f: f64) -> (f64, f64) {
    let int = f.trunc();
    (int, f - int)
}

const MANTISSA_MASK: u64 = (1 << 52) - 1;
const EXP_MASK: u64 = 0x7FF;
const BIAS: i64 = 1023;
const SMALLEST_NORMAL: f64 = f64::MIN_POSITIVE;

/// Go's `normalize`: a subnormal scaled into the normal range, with the exponent that
/// undoes it.
fn normalize(x: f64) -> (f64, i64) {
    if x.abs() < SMALLEST_NORMAL {
        return (x * (1u64 << 52) as f64, -52);
    }
    (x, 0)
}

/// Go's `Frexp`: `f == frac × 2**exp` with `|frac|` in `[½, 1)`; zero, ±Inf and NaN are
/// returned with exponent 0.
fn frexp(f: f64) -> (f64, i64) {
    if f == 0.0 || !f.is_finite() {
        return (f, 0);
    }
    let (f, mut exp) = normalize(f);
    let mut x = f.to_bits();
    exp += ((x >> 52) & EXP_MASK) as i64 - BIAS + 1;
    x &= !(EXP_MASK << 52);
    x |= ((BIAS - 1) as u64) << 52;
    (f64::from_bits(x), exp)
}

/// Go's `Ldexp`: `frac × 2**exp`, rounded once (subnormal results included).
fn ldexp(frac: f64, exp: i64) -> f64 {
    if frac == 0.0 || !frac.is_finite() {
        return frac;
    }
    let (frac, e) = normalize(frac);
    let mut exp = exp.saturating_add(e);
    let mut x = frac.to_bits();
    exp = exp.saturating_add(((x >> 52) & EXP_MASK) as i64 - BIAS);
    if exp < -1075 {
        return 0.0_f64.copysign(frac);
    }
    if exp > 1023 {
        return f64::INFINITY.copysign(frac);
    }
    let mut m = 1.0;
    if exp < -1022 {
        // Subnormal: build the normal 2**53 times larger, then scale (one rounding).
        exp += 53;
        m = 1.0 / (1u64 << 53) as f64;
    }
    x &= !(EXP_MASK << 52);
    x |= ((exp + BIAS) as u64) << 52;
    m * f64::from_bits(x)
}

/// Go's `math.Exp` on amd64 (`exp_amd64.s`, its FMA path): a Taylor series of the argument
/// reduced by `ln 2` and by 16, squared back four times.
fn exp(x: f64) -> f64 {
    const LOG2E: f64 = f64::from_bits(0x3FF7_1547_652B_82FE);
    const LN2U: f64 = f64::from_bits(0x3FE6_2E42_FEFA_3000);
    const LN2L: f64 = f64::from_bits(0x3D53_DE6A_F278_ECE6);
    const OVERFLOW: f64 = f64::from_bits(0x4086_2E42_FEFA_39EF);
    // 1/7! .. 1/3!, then ½ and 1: the series of exp(r) - 1 over r, highest degree first.
    const TAYLOR: [f64; 7] = [
        f64::from_bits(0x3F2A_01A0_1A01_A01A),
        f64::from_bits(0x3F56_C16C_16C1_6C17),
        f64::from_bits(0x3F81_1111_1111_1111),
        f64::from_bits(0x3FA5_5555_5555_5555),
        f64::from_bits(0x3FC5_5555_5555_5555),
        0.5,
        1.0,
    ];
    const C8: f64 = f64::from_bits(0x3EFA_01A0_1A01_A01A); // 1/8!

    let bits = x.to_bits();
    if bits & !(1 << 63) >= f64::INFINITY.to_bits() {
        // -Inf gives 0; NaN and +Inf themselves.
        return if x == f64::NEG_INFINITY { 0.0 } else { x };
    }
    if x > OVERFLOW {
        return f64::INFINITY;
    }
    let k = cvtsd2si(LOG2E * x);
    let kf = f64::from(k);
    let mut r = (-kf).mul_add(LN2U, x);
    r = (-kf).mul_add(LN2L, r);
    r *= 0.0625;
    let mut t = C8;
    for c in TAYLOR {
        t = t.mul_add(r, c);
    }
    r *= t;
    for _ in 0..3 {
        r *= r + 2.0;
    }
    r = r.mul_add(r + 2.0, 1.0);
    // r × 2**k, as the assembly builds the power of two.
    let biased = k.wrapping_add(0x3FF);
    if biased <= 0 {
        if biased < -52 {
            return 0.0;
        }
        r *= pow2_bits(biased + 0x3FE);
        return r * pow2_bits(1);
    }
    if biased >= 0x7FF {
        return f64::INFINITY;
    }
    r * pow2_bits(biased)
}

/// The float64 whose exponent field is `biased` and mantissa zero (`2**(biased-1023)`).
fn pow2_bits(biased: i32) -> f64 {
    f64::from_bits(u64::from(biased.max(0).unsigned_abs()) << 52)
}

/// x86's `CVTSD2SL`: rounded to nearest (ties to even); out of range the "integer
/// indefinite" `i32::MIN`.
fn cvtsd2si(v: f64) -> i32 {
    let r = v.round_ties_even();
    if (-2_147_483_648.0..=2_147_483_647.0).contains(&r) {
        r as i32
    } else {
        i32::MIN
    }
}

/// Go's `math.Log` on amd64 (`log_amd64.s`): FreeBSD's `log` with the exponent and
/// mantissa read straight from the bits.
fn log(x: f64) -> f64 {
    const HSQRT2: f64 = f64::from_bits(0x3FE6_A09E_667F_3BCD);
    const LN2HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
    const LN2LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
    const L1: f64 = f64::from_bits(0x3FE5_5555_5555_5593);
    const L2: f64 = f64::from_bits(0x3FD9_9999_9997_FA04);
    const L3: f64 = f64::from_bits(0x3FD2_4924_9422_9359);
    const L4: f64 = f64::from_bits(0x3FCC_71C5_1D8E_78AF);
    const L5: f64 = f64::from_bits(0x3FC7_4664_96CB_03DE);
    const L6: f64 = f64::from_bits(0x3FC3_9A09_D078_C69F);
    const L7: f64 = f64::from_bits(0x3FC2_F112_DF3E_5244);

    let bits = x.to_bits();
    if bits & !(1 << 63) == 0 {
        return f64::NEG_INFINITY;
    }
    if bits >> 63 == 1 {
        return f64::NAN;
    }
    if bits >= f64::INFINITY.to_bits() {
        return x;
    }
    let mut f1 = f64::from_bits((bits & MANTISSA_MASK) | 0x3FE0_0000_0000_0000);
    let mut k = f64::from(((bits >> 52) & EXP_MASK) as i32 - 0x3FE);
    // The assembly's `CMPSD …, 5` (not less than): HSQRT2 >= f1.
    if f1 <= HSQRT2 {
        k -= 1.0;
        f1 *= 2.0;
    }
    let f = f1 - 1.0;
    let s = f / (2.0 + f);
    let s2 = s * s;
    let s4 = s2 * s2;
    let t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
    let t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
    let r = t1 + t2;
    let hfsq = 0.5 * f * f;
    k * LN2HI - ((hfsq - (s * (hfsq + r) + k * LN2LO)) - f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact decimal of a float64 (what the calc tag prints before trimming).
    fn full(f: f64) -> String {
        format!("{f:.0}")
    }

    // Expected values: Go's algorithm worked through by hand and checked with an
    // independent model of it (exact FMA); `bits` where the printed form is not exact.
    #[test]
    fn integer_exponents_round_as_go_s_repeated_squaring() {
        assert_eq!(full(pow(10.0, 23.0)), "99999999999999991611392");
        assert_eq!(pow(10.0, 23.0).to_bits(), 0x44B5_2D02_C7E1_4AF6);
        assert_eq!(
            full(pow(3.0, 100.0)),
            "515377520732011405324234683475300136641464631296"
        );
        assert_eq!(pow(3.0, 100.0).to_bits(), 0x49D6_9194_F299_CDDB);
        assert_eq!(pow(100.0, 100.0).to_bits(), 0x6974_E718_D7D7_625D);
        assert!(full(pow(100.0, 100.0)).starts_with("1000000000000000479625595316606776"));
        assert_eq!(pow(10.0, 22.0), 1e22);
        assert_eq!(pow(10.0, 15.0), 1e15);
        assert_eq!(pow(9.0, 17.0).to_bits(), 0x434D_9FE7_7988_1944);
        assert_eq!(pow(1.1, 100.0).to_bits(), 0x40CA_EA4E_6126_BB8C);
        assert_eq!(pow(1.000_000_1, 1e9).to_bits(), 0x48F3_4944_5A54_3AB1);
        assert_eq!(pow(10.0, 308.0).to_bits(), 0x7FE1_CCF3_85EB_C8A3);
        assert_eq!(pow(10.0, -2.0).to_bits(), 0x3F84_7AE1_47AE_147B);
        assert_eq!(pow(1e-5, -30.0).to_bits(), 0x5F13_8D35_2E50_96A0);
        assert_eq!(pow(2.0, -1.0), 0.5);
        assert_eq!(pow(-2.0, 3.0), -8.0);
        assert_eq!(pow(-2.0, 2.0), 4.0);
        assert_eq!(pow(2.0, 10.0), 1024.0);
        assert_eq!(pow(2.0, 1023.0), 8.988_465_674_311_58e307);
        assert_eq!(pow(2.0, -1074.0), 5e-324);
        assert_eq!(pow(2.0, -1075.0), 0.0);
    }

    #[test]
    fn fractional_exponents_go_through_go_s_exp_and_log() {
        assert_eq!(pow(2.0, 0.5), std::f64::consts::SQRT_2);
        assert_eq!(pow(2.0, 1.5).to_bits(), 0x4006_A09E_667F_3BCC);
        assert_eq!(pow(1.5, 2.5).to_bits(), 0x4006_0B9F_D68A_4555);
        assert_eq!(pow(7.0, 0.25).to_bits(), 0x3FFA_0675_250E_E9F3);
        assert_eq!(pow(10.0, 0.333_333_333_3).to_bits(), 0x4001_3C48_4132_C1CB);
        assert_eq!(pow(123.456, 7.89).to_bits(), 0x435C_37E5_3D5E_93D1);
        assert_eq!(pow(0.5, -0.75).to_bits(), 0x3FFA_E89F_995A_D3AE);
        assert_eq!(pow(2.0, 0.75).to_bits(), 0x3FFA_E89F_995A_D3AD);
        assert_eq!(pow(7.0, -0.5).to_bits(), 0x3FD8_3091_E6A7_F7E6);
    }

    #[test]
    fn special_cases_follow_go() {
        assert!(pow(-8.0, 0.333_333_333_3).is_nan());
        assert_eq!(pow(0.0, -1.0), f64::INFINITY);
        assert_eq!(pow(-0.0, -1.0), f64::NEG_INFINITY);
        assert_eq!(pow(-0.0, -2.0), f64::INFINITY);
        assert!(pow(-0.0, 3.0).is_sign_negative());
        assert_eq!(pow(0.0, 2.0), 0.0);
        assert_eq!(pow(10.0, 309.0), f64::INFINITY);
        assert_eq!(pow(2.0, 1024.0), f64::INFINITY);
        assert_eq!(pow(-1.0, 1e300), 1.0);
        assert_eq!(pow(1e300, 1e300), f64::INFINITY);
        assert_eq!(pow(0.999, 1e20), 0.0);
        assert_eq!(pow(f64::NAN, 0.0), 1.0);
        assert_eq!(pow(1.0, f64::NAN), 1.0);
        assert!(pow(f64::NAN, 2.0).is_nan());
        assert!(pow(2.0, f64::NAN).is_nan());
        assert_eq!(pow(-1.0, f64::INFINITY), 1.0);
        assert_eq!(pow(0.5, f64::INFINITY), 0.0);
        assert_eq!(pow(0.5, f64::NEG_INFINITY), f64::INFINITY);
        assert_eq!(pow(2.0, f64::NEG_INFINITY), 0.0);
        assert_eq!(pow(f64::INFINITY, -1.0), 0.0);
        assert_eq!(pow(f64::NEG_INFINITY, 3.0), f64::NEG_INFINITY);
        assert_eq!(pow(f64::NEG_INFINITY, -3.0).to_bits(), (-0.0f64).to_bits());
        assert!(pow(-4.0, 0.5).is_nan());
    }

    #[test]
    fn exp_and_log_are_go_s_amd64_routines() {
        assert_eq!(exp(1.0), std::f64::consts::E);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp(710.0), f64::INFINITY);
        assert_eq!(exp(-745.0), 5e-324);
        assert_eq!(exp(-746.0), 0.0);
        assert_eq!(exp(-1e10), 0.0);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(log(0.0), f64::NEG_INFINITY);
        assert!(log(-1.0).is_nan());
        assert_eq!(log(1.0), 0.0);
        assert_eq!(log(f64::INFINITY), f64::INFINITY);
        assert_eq!(log(std::f64::consts::E), 1.0);
    }
}
