//! Cost of one `uid_mask` / `uid_unmask` / Crockford encode outside PostgreSQL (FF1-AES-256 over
//! 63 bits): `cargo run --release -p pg_idgen_core --example mask_cost`.
use pg_idgen_core::codes::{self, Format};
use pg_idgen_core::mask::Mask;
use std::hint::black_box;

fn main() {
    let key: Vec<u8> = (0u8..32).collect();
    let m = Mask::new(&key).unwrap();
    let n = 2_000_000u64;
    let mut acc = 0u64;
    let t = std::time::Instant::now();
    for x in 0..n {
        acc ^= m.mask(black_box(x)).unwrap();
    }
    let mask_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let t = std::time::Instant::now();
    for x in 0..n {
        acc ^= m.unmask(black_box(x)).unwrap();
    }
    let unmask_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let t = std::time::Instant::now();
    for x in 0..n {
        acc ^= codes::encode(black_box((x << 40) as i64), Format::Crockford { check: false }).unwrap().len()
            as u64;
    }
    let enc_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let t = std::time::Instant::now();
    let key2 = key.clone();
    for _ in 0..100_000 {
        acc ^= Mask::new(black_box(&key2)).unwrap().bits() as u64;
    }
    let new_ns = t.elapsed().as_nanos() as f64 / 100_000.0;
    println!("one AES-256 block {:.1} ns", aes_block_cost());
    println!("mask {mask_ns:.0} ns, unmask {unmask_ns:.0} ns, crockford encode {enc_ns:.0} ns, key setup {new_ns:.0} ns per call ({acc})");
}

#[allow(dead_code)]
fn aes_block_cost() -> f64 {
    use aes::cipher::{BlockCipherEncrypt, KeyInit};
    let c = aes::Aes256Enc::new(&[7u8; 32].into());
    let mut b = aes::Block::default();
    let n = 2_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        c.encrypt_block(&mut b);
        b = black_box(b);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}
