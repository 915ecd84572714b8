//! Cost of one `next_id` call outside PostgreSQL (the clock policy alone, real clock):
//! `cargo run --release -p pg_idgen_core --example hotpath`.
use pg_idgen_core::*;
use std::sync::atomic::Ordering;

struct Real;
impl Clock for Real {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
    }
    fn wait_until(&self, target_ms: i64, _max_ms: i64) {
        while self.now_ms() < target_ms {
            std::hint::spin_loop();
        }
    }
}

fn main() {
    let ws = WorkerState::default();
    ws.reserved.store(u64::MAX, Ordering::Relaxed);
    let layout = Layout::by_name("default").unwrap();
    let policy = Policy {
        max_drift_ms: 1000,
        max_wait_ms: 100,
        start: SequenceStart::Vibrate,
        reserve_window_ms: 1000,
    };
    let mut local = LocalState::new(1);
    let n = 2_000_000u32;
    let t = std::time::Instant::now();
    let mut x = 0i64;
    for _ in 0..n {
        x ^= next_id(&ws, &layout, 1, policy, &Real, &mut local, |_| unreachable!()).unwrap().id;
    }
    let per = t.elapsed().as_nanos() / n as u128;
    let t = std::time::Instant::now();
    for _ in 0..n {
        x ^= Real.now_ms();
    }
    println!("next_id: {per} ns/call; clock alone: {} ns/call ({x})", t.elapsed().as_nanos() / n as u128);
}
