//! Keyed, reversible masking of ids: FF1 format-preserving encryption (NIST SP 800-38G,
//! the `fpe` crate) with AES-256, radix 2, over numeral strings of 63 binary digits. That is a
//! keyed pseudo-random permutation of `0 ..= 2^63 - 1` onto itself: a masked id is again a
//! non-negative `bigint`, distinct ids give distinct masked ids, and without the key the masked
//! id says nothing about order, count, time or worker.
//!
//! The FF1 algorithm (the Feistel rounds, the AES-CBC-MAC PRF, the round-key expansion) is the
//! `fpe` crate's, unchanged. This module supplies only the *numeral string* the algorithm works
//! on: [`Bits`], a binary numeral string of up to 128 numerals held as the integer it denotes
//! (`NUM_2(X)`, numeral 1 the most significant bit), whose two halves (≤ 64 numerals each)
//! are `u64`s. The crate's own numeral strings allocate and use big integers at every round;
//! `Bits` does the same arithmetic (`NUM`, `STR`, addition and subtraction modulo `2^m`) on
//! machine words, without allocating. The tests run the crate's published vectors (NIST samples
//! and the Zcash radix-2 vectors) through [`ff1`], and compare `Bits` with the crate's
//! `FlexibleNumeralString` on random inputs.
//!
//! Security claim and limits (also in the README, "Opaque public ids"):
//! * FF1 is a NIST-approved FPE mode; its security rests on AES. For a domain of 2^63 points the
//!   known attacks on FF1 (which need small domains, NIST SP 800-38G Rev. 1 raised the minimum to
//!   a million points) do not apply; without the key, masked ids are indistinguishable from a
//!   random permutation of the ids, so they hide order, count, creation time and worker.
//! * It is deterministic: one id under one key version always masks to the same value (equality
//!   and frequency of ids stay visible, as they must for the masked id to serve as a key).
//! * It is not a signature or a MAC: every 63-bit value unmasks to *some* id, so a made-up
//!   masked id is not detected by the mask; the application checks that the id exists (and that
//!   the caller may see it). Wrong key or wrong key version: garbage, not an error.

use aes::cipher::{BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, Key, KeyInit, KeySizeUser};
use aes::{Aes128, Aes192, Aes256Enc};
use fpe::ff1::{FlexibleNumeralString, NumeralString, NumeralStringError, Operations, FF1};
use std::sync::Arc;

/// Bits of the masking domain: the non-negative `bigint`s, `0 ..= 2^63 - 1`.
pub const DOMAIN_BITS: u32 = 63;
/// The smallest domain FF1 accepts with radix 2 (NIST SP 800-38G Rev. 1: at least 10^6 points).
pub const MIN_BITS: u32 = 20;
/// Length of a masking key: AES-256.
pub const KEY_LEN: usize = 32;

/// A binary numeral string of at most 128 numerals, held as the integer it denotes in radix 2
/// (its first numeral is the most significant bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bits {
    value: u128,
    len: u32,
}

impl Bits {
    /// The numeral string of `len` binary digits that denotes `value`.
    pub fn new(value: u128, len: u32) -> Option<Bits> {
        (len <= 128 && (len == 128 || value >> len == 0)).then_some(Bits { value, len })
    }
    pub fn value(&self) -> u128 {
        self.value
    }
}

/// One half of a [`Bits`] during FF1: at most 64 numerals.
#[derive(Clone, Copy, Debug)]
pub struct Half {
    value: u64,
    len: u32,
}

/// Big-endian bytes of a [`Half`]: `STR^b_256(NUM_2(X))`, `b ≤ 16`.
pub struct BeBytes {
    buf: [u8; 16],
    len: usize,
}

impl AsRef<[u8]> for BeBytes {
    fn as_ref(&self) -> &[u8] {
        &self.buf[16 - self.len..]
    }
}

#[inline]
fn low_mask(m: usize) -> u64 {
    if m >= 64 {
        u64::MAX
    } else {
        (1u64 << m) - 1
    }
}

/// `NUM(S) mod 2^64`: only the low 64 bits of the PRF output matter modulo `2^m`, `m ≤ 64`.
#[inline]
fn num_low64(s: impl Iterator<Item = u8>) -> u64 {
    s.fold(0u64, |acc, byte| (acc << 8) | u64::from(byte))
}

impl Operations for Half {
    type Bytes = BeBytes;

    fn numeral_count(&self) -> usize {
        self.len as usize
    }

    fn to_be_bytes(&self, radix: u32, b: usize) -> BeBytes {
        debug_assert_eq!(radix, 2);
        // b = ceil(len / 8) ≤ 8 for a half of ≤ 64 numerals; the buffer allows up to 16.
        let mut buf = [0u8; 16];
        buf[8..].copy_from_slice(&self.value.to_be_bytes());
        BeBytes { buf, len: b.min(16) }
    }

    fn add_mod_exp(self, other: impl Iterator<Item = u8>, radix: u32, m: usize) -> Self {
        debug_assert_eq!(radix, 2);
        let y = num_low64(other);
        Half { value: self.value.wrapping_add(y) & low_mask(m), len: m as u32 }
    }

    fn sub_mod_exp(self, other: impl Iterator<Item = u8>, radix: u32, m: usize) -> Self {
        debug_assert_eq!(radix, 2);
        let y = num_low64(other);
        Half { value: self.value.wrapping_sub(y) & low_mask(m), len: m as u32 }
    }
}

impl NumeralString for Bits {
    type Ops = Half;

    fn is_valid(&self, radix: u32) -> bool {
        radix == 2 && self.len <= 128 && (self.len == 128 || self.value >> self.len == 0)
    }

    fn numeral_count(&self) -> usize {
        self.len as usize
    }

    /// `A = X[1..u]` (the high `u = floor(n/2)` bits), `B = X[u+1..n]` (the low `v = n - u`).
    fn split(&self) -> (Half, Half) {
        let u = self.len / 2;
        let v = self.len - u;
        let b = (self.value & u128::from(low_mask(v as usize))) as u64;
        let a = if v >= 128 { 0 } else { (self.value >> v) as u64 };
        (Half { value: a, len: u }, Half { value: b, len: v })
    }

    fn concat(a: Half, b: Half) -> Bits {
        let value = if b.len >= 128 { 0 } else { u128::from(a.value) << b.len } | u128::from(b.value);
        Bits { value, len: a.len + b.len }
    }
}

/// AES-256 (the encryption direction, all FF1 needs) behind a reference count. The `fpe`
/// crate clones its cipher for the PRF of every one of the ten rounds; the expanded key
/// schedule of the runtime-detected AES backends is about a kilobyte, and copying it eleven
/// times per call cost more than the AES itself. Cloning this is a reference-count increment;
/// the encryption is `Aes256Enc`'s.
#[derive(Clone)]
pub struct SharedAes256(Arc<Aes256Enc>);

impl BlockSizeUser for SharedAes256 {
    type BlockSize = <Aes256Enc as BlockSizeUser>::BlockSize;
}

impl KeySizeUser for SharedAes256 {
    type KeySize = <Aes256Enc as KeySizeUser>::KeySize;
}

impl KeyInit for SharedAes256 {
    fn new(key: &Key<Self>) -> Self {
        SharedAes256(Arc::new(Aes256Enc::new(key)))
    }
}

impl BlockCipherEncrypt for SharedAes256 {
    #[inline]
    fn encrypt_with_backend(&self, f: impl BlockCipherEncClosure<BlockSize = Self::BlockSize>) {
        self.0.encrypt_with_backend(f)
    }
}

/// Why a mask could not be made or applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaskError {
    /// The key is not 32 bytes (AES-256).
    KeyLength(usize),
    /// The domain is not `MIN_BITS ..= 63` bits.
    DomainBits(u32),
    /// The value is negative or does not fit the domain.
    OutOfDomain { value: i128, bits: u32 },
}

impl std::fmt::Display for MaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaskError::KeyLength(n) => write!(f, "a masking key is {KEY_LEN} bytes (AES-256), not {n}"),
            MaskError::DomainBits(b) => {
                write!(f, "a masking domain has {MIN_BITS} to {DOMAIN_BITS} bits, not {b}")
            }
            MaskError::OutOfDomain { value, bits } if *value < 0 => {
                write!(f, "{value} is negative; only ids 0 .. 2^{bits}-1 can be masked")
            }
            MaskError::OutOfDomain { value, bits } => {
                write!(f, "{value} is out of the masking domain 0 .. 2^{bits}-1")
            }
        }
    }
}

impl std::error::Error for MaskError {}

/// A keyed permutation of `0 ..= 2^bits - 1` (`bits` = 63 for ids): FF1-AES-256, radix 2,
/// empty tweak. Build it once per key (it holds the expanded AES key schedule).
pub struct Mask {
    ff1: FF1<SharedAes256>,
    bits: u32,
}

impl Mask {
    /// The mask of the non-negative `bigint`s under a 32-byte key.
    pub fn new(key: &[u8]) -> Result<Mask, MaskError> {
        Mask::with_bits(key, DOMAIN_BITS)
    }

    /// A mask of a smaller domain (for tests: small enough to check exhaustively).
    pub fn with_bits(key: &[u8], bits: u32) -> Result<Mask, MaskError> {
        if key.len() != KEY_LEN {
            return Err(MaskError::KeyLength(key.len()));
        }
        if !(MIN_BITS..=DOMAIN_BITS).contains(&bits) {
            return Err(MaskError::DomainBits(bits));
        }
        let ff1 = FF1::<SharedAes256>::new(key, 2).expect("radix 2 is valid");
        Ok(Mask { ff1, bits })
    }

    pub fn bits(&self) -> u32 {
        self.bits
    }

    fn check(&self, x: u64) -> Result<Bits, MaskError> {
        Bits::new(u128::from(x), self.bits)
            .ok_or(MaskError::OutOfDomain { value: i128::from(x), bits: self.bits })
    }

    /// The masked value of `x`, `0 ≤ x < 2^bits`.
    pub fn mask(&self, x: u64) -> Result<u64, MaskError> {
        let ns = self.check(x)?;
        let out = self.ff1.encrypt(&[], &ns).expect("a valid binary numeral string of 20..63 numerals");
        Ok(out.value as u64)
    }

    /// The inverse of [`Mask::mask`].
    pub fn unmask(&self, y: u64) -> Result<u64, MaskError> {
        let ns = self.check(y)?;
        let out = self.ff1.decrypt(&[], &ns).expect("a valid binary numeral string of 20..63 numerals");
        Ok(out.value as u64)
    }

    /// [`Mask::mask`] on a `bigint`: negative values are refused.
    pub fn mask_i64(&self, id: i64) -> Result<i64, MaskError> {
        let x = u64::try_from(id)
            .map_err(|_| MaskError::OutOfDomain { value: i128::from(id), bits: self.bits })?;
        self.mask(x).map(|v| v as i64)
    }

    /// [`Mask::unmask`] on a `bigint`: negative values are refused.
    pub fn unmask_i64(&self, masked: i64) -> Result<i64, MaskError> {
        let y = u64::try_from(masked)
            .map_err(|_| MaskError::OutOfDomain { value: i128::from(masked), bits: self.bits })?;
        self.unmask(y).map(|v| v as i64)
    }
}

/// The largest domain [`ff1`] accepts: radix^len ≤ 2^MAX_DOMAIN_BITS. NIST SP 800-38G lets an
/// FF1 implementation choose its `maxlen` (below 2^32 numerals); this one bounds the domain as a
/// size in bits, so that one call takes milliseconds at most whatever the radix (FF1 is
/// quadratic in the length; a call cannot be interrupted inside the rounds) and the published
/// vectors all fit (the longest: 128 numerals of radix 36, 662 bits).
pub const MAX_DOMAIN_BITS: u32 = 1024;

/// The longest tweak [`ff1`] accepts, in bytes (NIST SP 800-38G: `maxTlen` is the
/// implementation's choice). Every round of FF1 runs the PRF over the tweak.
pub const MAX_TWEAK_BYTES: usize = 1024;

/// `maxlen` for `radix`: the most numerals whose domain stays within 2^[`MAX_DOMAIN_BITS`]
/// (1024 for radix 2, 308 for radix 10, 198 for radix 36, 64 for radix 65536).
pub fn ff1_max_len(radix: u32) -> usize {
    if radix < 2 {
        return 0;
    }
    if radix.is_power_of_two() {
        return (MAX_DOMAIN_BITS / radix.trailing_zeros()) as usize;
    }
    // radix^n ≤ 2^bits ⇔ n·log2(radix) ≤ bits; not a power of two, so never equal: floor is exact
    // up to rounding far below one numeral.
    (f64::from(MAX_DOMAIN_BITS) / f64::from(radix).log2()).floor() as usize
}

/// Why a generic FF1 call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ff1Error {
    /// AES keys are 16, 24 or 32 bytes.
    KeyLength(usize),
    /// FF1 radixes are 2 ..= 65536.
    Radix(u32),
    /// A numeral is not below the radix, or the string is too short or too long.
    Numerals(NumeralStringError),
    /// More numerals than [`ff1_max_len`] allows for the radix.
    TooLong { len: usize, max_len: usize, radix: u32 },
    /// A tweak longer than [`MAX_TWEAK_BYTES`].
    TweakTooLong { len: usize },
}

impl std::fmt::Display for Ff1Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ff1Error::KeyLength(n) => write!(f, "an AES key is 16, 24 or 32 bytes, not {n}"),
            Ff1Error::Radix(r) => write!(f, "an FF1 radix is 2 to 65536, not {r}"),
            Ff1Error::Numerals(NumeralStringError::InvalidForRadix(r)) => {
                write!(f, "every numeral must be between 0 and {} for radix {r}", r - 1)
            }
            Ff1Error::Numerals(NumeralStringError::TooShort { ns_len, min_len }) => write!(
                f,
                "{ns_len} numerals are too few for FF1 with this radix (at least {min_len}: a domain of a million values)"
            ),
            Ff1Error::Numerals(NumeralStringError::TooLong { ns_len, max_len }) => {
                write!(f, "{ns_len} numerals are too many for FF1 (at most {max_len})")
            }
            Ff1Error::TooLong { len, max_len, radix } => write!(
                f,
                "{len} numerals are too many for FF1 with radix {radix}: at most {max_len} (a domain of at most 2^{MAX_DOMAIN_BITS} values)"
            ),
            Ff1Error::TweakTooLong { len } => {
                write!(f, "an FF1 tweak of {len} bytes is too long: at most {MAX_TWEAK_BYTES} bytes")
            }
        }
    }
}

impl std::error::Error for Ff1Error {}

fn run<C>(ff: FF1<C>, tweak: &[u8], radix: u32, numerals: &[u16], decrypt: bool) -> Result<Vec<u16>, Ff1Error>
where
    C: BlockCipherEncrypt + Clone,
{
    if radix == 2 && numerals.len() <= 128 && numerals.iter().all(|&n| n < 2) {
        // The machine-word numeral string, the one `uid_mask` uses.
        let value = numerals.iter().fold(0u128, |acc, &n| (acc << 1) | u128::from(n));
        let ns = Bits { value, len: numerals.len() as u32 };
        let out = if decrypt { ff.decrypt(tweak, &ns) } else { ff.encrypt(tweak, &ns) };
        let out = out.map_err(Ff1Error::Numerals)?;
        let n = numerals.len();
        Ok((0..n).map(|i| ((out.value >> (n - 1 - i)) & 1) as u16).collect())
    } else {
        let ns = FlexibleNumeralString::from(numerals.to_vec());
        let out = if decrypt { ff.decrypt(tweak, &ns) } else { ff.encrypt(tweak, &ns) };
        out.map(Vec::from).map_err(Ff1Error::Numerals)
    }
}

/// The length bounds of [`ff1`], checked before anything else is done with the input (the
/// caller can check them before converting a long argument).
pub fn check_ff1_lengths(radix: u32, len: usize, tweak_len: usize) -> Result<(), Ff1Error> {
    let max_len = ff1_max_len(radix);
    if len > max_len {
        return Err(Ff1Error::TooLong { len, max_len, radix });
    }
    if tweak_len > MAX_TWEAK_BYTES {
        return Err(Ff1Error::TweakTooLong { len: tweak_len });
    }
    Ok(())
}

/// FF1 (NIST SP 800-38G) with AES-128/192/256 (by key length), any radix and tweak, on a
/// numeral string (first numeral most significant). Binary strings of up to 128 numerals go
/// through [`Bits`], the numeral string of [`Mask`]; others through the crate's
/// `FlexibleNumeralString`. For test vectors and interoperability.
pub fn ff1(
    key: &[u8],
    tweak: &[u8],
    radix: u32,
    numerals: &[u16],
    decrypt: bool,
) -> Result<Vec<u16>, Ff1Error> {
    if !(2..=65536).contains(&radix) {
        return Err(Ff1Error::Radix(radix));
    }
    check_ff1_lengths(radix, numerals.len(), tweak.len())?;
    match key.len() {
        16 => run(
            FF1::<Aes128>::new(key, radix).map_err(|_| Ff1Error::Radix(radix))?,
            tweak,
            radix,
            numerals,
            decrypt,
        ),
        24 => run(
            FF1::<Aes192>::new(key, radix).map_err(|_| Ff1Error::Radix(radix))?,
            tweak,
            radix,
            numerals,
            decrypt,
        ),
        32 => run(
            FF1::<SharedAes256>::new(key, radix).map_err(|_| Ff1Error::Radix(radix))?,
            tweak,
            radix,
            numerals,
            decrypt,
        ),
        n => Err(Ff1Error::KeyLength(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ff1_vectors;
    use aes::Aes256;

    /// A fixed key for deterministic tests.
    const KEY: [u8; 32] = [
        0x2B, 0x7E, 0x15, 0x16, 0x28, 0xAE, 0xD2, 0xA6, 0xAB, 0xF7, 0x15, 0x88, 0x09, 0xCF, 0x4F, 0x3C, 0xEF,
        0x43, 0x59, 0xD8, 0xD5, 0x80, 0xAA, 0x4F, 0x7F, 0x03, 0x6D, 0x6F, 0x04, 0xFC, 0x6A, 0x94,
    ];

    /// xorshift64*: test inputs, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    #[test]
    fn ff1_max_len_bounds_the_domain_to_1024_bits() {
        assert_eq!(ff1_max_len(2), 1024);
        assert_eq!(ff1_max_len(10), 308); // 10^308 < 2^1024 < 10^309
        assert_eq!(ff1_max_len(36), 198);
        assert_eq!(ff1_max_len(65536), 64);
        assert_eq!(ff1_max_len(65535), 64);
        for radix in [3u32, 10, 36, 62, 255, 1000, 65535] {
            let n = ff1_max_len(radix) as f64;
            let bits = f64::from(radix).log2();
            assert!(n * bits <= 1024.0 && (n + 1.0) * bits > 1024.0, "radix {radix}");
        }
    }

    #[test]
    fn ff1_refuses_input_above_the_bounds_before_any_work() {
        let key = [0u8; 16];
        assert!(ff1(&key, &[], 10, &[1; 308], false).is_ok());
        assert_eq!(
            ff1(&key, &[], 10, &[1; 309], false),
            Err(Ff1Error::TooLong { len: 309, max_len: 308, radix: 10 })
        );
        assert!(ff1(&key, &[], 2, &[1; 1024], false).is_ok());
        assert!(matches!(ff1(&key, &[], 2, &[1; 1025], true), Err(Ff1Error::TooLong { .. })));
        assert!(ff1(&key, &[7; 1024], 10, &[1; 10], false).is_ok());
        assert_eq!(ff1(&key, &[7; 1025], 10, &[1; 10], false), Err(Ff1Error::TweakTooLong { len: 1025 }));
        // a key length error does not hide the bound, nor the bound the radix
        assert!(matches!(ff1(&[0u8; 3], &[], 10, &[1; 5000], false), Err(Ff1Error::TooLong { .. })));
        assert_eq!(ff1(&key, &[], 1, &[1; 5000], false), Err(Ff1Error::Radix(1)));
    }

    #[test]
    fn the_crates_published_vectors_pass() {
        let mut binary = 0;
        let mut all = 0;
        for v in ff1_vectors::get() {
            let ct = ff1(&v.key, &v.tweak, v.radix, &v.pt, false).unwrap();
            assert_eq!(ct, v.ct, "encrypt, radix {} key {:?}", v.radix, v.aes);
            let pt = ff1(&v.key, &v.tweak, v.radix, &v.ct, true).unwrap();
            assert_eq!(pt, v.pt, "decrypt, radix {}", v.radix);
            all += 1;
            if v.radix == 2 {
                binary += 1;
            }
        }
        assert_eq!((all, binary), (15, 5), "9 NIST samples, 1 Capital One, 4 Zcash, 1 specific");
    }

    #[test]
    fn bits_agree_with_the_crates_flexible_numeral_string() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let ff = FF1::<Aes256>::new(&KEY, 2).unwrap();
        for n in [20u32, 21, 32, 33, 62, 63, 64, 65, 100, 127, 128] {
            for _ in 0..40 {
                let value = (u128::from(rng.next()) << 64 | u128::from(rng.next()))
                    & if n == 128 { u128::MAX } else { (1u128 << n) - 1 };
                let digits: Vec<u16> = (0..n).map(|i| ((value >> (n - 1 - i)) & 1) as u16).collect();
                let tweak: Vec<u8> = (0..(rng.next() % 20) as u8).collect();
                let flex = ff.encrypt(&tweak, &FlexibleNumeralString::from(digits.clone())).unwrap();
                let flex: Vec<u16> = flex.into();
                let bits = ff.encrypt(&tweak, &Bits::new(value, n).unwrap()).unwrap();
                let bits_digits: Vec<u16> =
                    (0..n).map(|i| ((bits.value >> (n - 1 - i)) & 1) as u16).collect();
                assert_eq!(bits_digits, flex, "n = {n}");
                assert_eq!(ff.decrypt(&tweak, &bits).unwrap().value, value);
            }
        }
    }

    #[test]
    fn mask_is_ff1_over_63_binary_digits_with_an_empty_tweak() {
        let m = Mask::new(&KEY).unwrap();
        for x in [0u64, 1, 12345, (1 << 62) + 7, (1 << 63) - 1] {
            let digits: Vec<u16> = (0..63).map(|i| ((x >> (62 - i)) & 1) as u16).collect();
            let ct = ff1(&KEY, &[], 2, &digits, false).unwrap();
            let y = ct.iter().fold(0u64, |a, &d| a << 1 | u64::from(d));
            assert_eq!(m.mask(x).unwrap(), y);
        }
    }

    #[test]
    fn errors() {
        assert_eq!(Mask::new(&[0; 16]).err(), Some(MaskError::KeyLength(16)));
        assert_eq!(Mask::with_bits(&KEY, 19).err(), Some(MaskError::DomainBits(19)));
        assert_eq!(Mask::with_bits(&KEY, 64).err(), Some(MaskError::DomainBits(64)));
        let m = Mask::new(&KEY).unwrap();
        assert!(matches!(m.mask_i64(-1), Err(MaskError::OutOfDomain { value: -1, bits: 63 })));
        assert!(matches!(m.unmask_i64(i64::MIN), Err(MaskError::OutOfDomain { .. })));
        assert!(matches!(m.mask(1 << 63), Err(MaskError::OutOfDomain { .. })));
        assert_eq!(ff1(&[0; 15], &[], 10, &[0; 6], false), Err(Ff1Error::KeyLength(15)));
        assert_eq!(ff1(&[0; 16], &[], 1, &[0; 6], false), Err(Ff1Error::Radix(1)));
        assert!(matches!(
            ff1(&[0; 16], &[], 10, &[0; 5], false),
            Err(Ff1Error::Numerals(NumeralStringError::TooShort { .. }))
        ));
        assert!(matches!(
            ff1(&[0; 16], &[], 10, &[10; 6], false),
            Err(Ff1Error::Numerals(NumeralStringError::InvalidForRadix(10)))
        ));
        assert!(matches!(
            ff1(&[0; 16], &[], 2, &[0; 19], false),
            Err(Ff1Error::Numerals(NumeralStringError::TooShort { .. }))
        ));
    }

    fn round_trip(m: &Mask, ids: impl Iterator<Item = u64>) -> usize {
        let mut n = 0;
        for x in ids {
            let y = m.mask(x).unwrap();
            assert!(y < 1 << 63);
            assert_eq!(m.unmask(y).unwrap(), x, "id {x}");
            n += 1;
        }
        n
    }

    #[test]
    fn round_trip_edges_sequential_random() {
        let m = Mask::new(&KEY).unwrap();
        let max = (1u64 << 63) - 1;
        round_trip(&m, [0, 1, 2, max, max - 1, 1 << 62, (1 << 62) - 1, 1 << 31, 1 << 32].into_iter());
        round_trip(&m, 0..20_000);
        round_trip(&m, max - 20_000..=max);
        let mut rng = Rng(42);
        round_trip(&m, (0..20_000).map(|_| rng.next() >> 1));
        assert_eq!(m.mask_i64(i64::MAX).and_then(|y| m.unmask_i64(y)), Ok(i64::MAX));
    }

    /// The 10,000,000-id round trip and collision check; about 10 s in release:
    /// `cargo test -p pg_idgen_core --release -- --ignored`.
    #[test]
    #[ignore]
    fn ten_million_round_trip_and_no_collision() {
        let m = Mask::new(&KEY).unwrap();
        let mut masked = Vec::with_capacity(10_000_000);
        for x in 0..10_000_000u64 {
            let y = m.mask(x).unwrap();
            assert_eq!(m.unmask(y).unwrap(), x);
            masked.push(y);
        }
        masked.sort_unstable();
        masked.dedup();
        assert_eq!(masked.len(), 10_000_000, "no two of 10M sequential ids mask to one value");
        let mut rng = Rng(7);
        let max = (1u64 << 63) - 1;
        assert_eq!(round_trip(&m, (0..4_990_000).map(|_| rng.next() >> 1)), 4_990_000);
        assert_eq!(round_trip(&m, max - 10_000..=max), 10_001);
    }

    /// Exhaustive over the smallest domain FF1 allows (2^20): a permutation, and its inverse.
    #[test]
    fn exhaustive_small_domain_is_a_permutation() {
        let m = Mask::with_bits(&KEY, MIN_BITS).unwrap();
        let n = 1usize << MIN_BITS;
        let mut seen = vec![false; n];
        for x in 0..n as u64 {
            let y = m.mask(x).unwrap() as usize;
            assert!(y < n && !seen[y], "collision at {x}");
            seen[y] = true;
            if x % 97 == 0 {
                assert_eq!(m.unmask(y as u64).unwrap(), x);
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// Spearman rank correlation between consecutive ids and their masks, over 100,000 ids: for
    /// an order-preserving (or reversing) map it is ±1, for a random permutation its standard
    /// deviation is 1/sqrt(n-1) ≈ 0.0032. Also: about half of the steps go up, and every output
    /// bit is 1 about half of the time.
    #[test]
    fn consecutive_ids_show_no_order() {
        let m = Mask::new(&KEY).unwrap();
        let n = 100_000usize;
        let ys: Vec<u64> = (0..n as u64).map(|x| m.mask(x + 1_000_000).unwrap()).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| ys[i]);
        let mut rank = vec![0usize; n];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        let d2: f64 = (0..n).map(|i| (i as f64 - rank[i] as f64).powi(2)).sum();
        let nf = n as f64;
        let rho = 1.0 - 6.0 * d2 / (nf * (nf * nf - 1.0));
        assert!(rho.abs() < 0.016, "Spearman rho {rho} (5 sigma = 0.016)");
        let ups = ys.windows(2).filter(|w| w[1] > w[0]).count() as f64 / (nf - 1.0);
        assert!((ups - 0.5).abs() < 0.008, "fraction of increasing steps {ups}");
        for bit in 0..63 {
            let ones = ys.iter().filter(|&&y| y >> bit & 1 == 1).count() as f64 / nf;
            assert!((ones - 0.5).abs() < 0.008, "bit {bit} is 1 in {ones} of masked ids");
        }
    }

    #[test]
    fn keys_and_domains_give_different_permutations() {
        let a = Mask::new(&KEY).unwrap();
        let mut k2 = KEY;
        k2[31] ^= 1;
        let b = Mask::new(&k2).unwrap();
        let same = (0..1000u64).filter(|&x| a.mask(x).unwrap() == b.mask(x).unwrap()).count();
        assert_eq!(same, 0);
    }
}
