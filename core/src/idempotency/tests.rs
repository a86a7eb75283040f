#![allow(clippy::arithmetic_side_effects)]

use super::*;
use alloc::format;
use alloc::string::ToString;

#[test]
fn fnv_core_matches_the_published_vectors() {
    assert_eq!(fnv1a(FNV_OFFSET, b""), FNV_OFFSET);
    assert_eq!(
        fnv1a(FNV_OFFSET, b"a"),
        0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964
    );
    assert_eq!(
        fnv1a(FNV_OFFSET, b"foobar"),
        0x343e_1662_793c_64bf_6f0d_3597_ba44_6f18
    );
}

/// Frozen: changing these breaks every key already sent upstream or stored.
#[test]
fn business_id_keys_are_frozen() {
    assert_eq!(
        IdempotencyKey::from_business_id(b"order-42").to_string(),
        "37664fd1-64f1-842c-9001-83e936ed15fb"
    );
    assert_eq!(
        IdempotencyKey::from_business_id(b"").to_string(),
        "3f074799-eb66-83e2-ab2e-64153136068a"
    );
    assert_eq!(
        IdempotencyKey::from_business_id(b"order-42"),
        IdempotencyKey::from_business_id(b"order-42")
    );
    assert_ne!(
        IdempotencyKey::from_business_id(b"order-42"),
        IdempotencyKey::from_business_id(b"order-43")
    );
}

fn variant_bits(k: IdempotencyKey) -> u128 {
    (k.as_u128() >> 62) & 0b11
}

#[test]
fn version_and_variant_bits() {
    let derived = IdempotencyKey::from_business_id(b"x");
    assert_eq!(derived.version(), 8);
    assert_eq!(variant_bits(derived), 0b10);
    let mut rng = crate::rng::from_u64(1);
    for _ in 0..100 {
        let k = IdempotencyKey::random(&mut rng);
        assert_eq!(k.version(), 4);
        assert_eq!(variant_bits(k), 0b10);
        let s = k.to_string();
        assert_eq!(s.as_bytes()[14], b'4');
        assert!(matches!(s.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{s}");
    }
    assert_eq!(IdempotencyKey::from_u128(0).version(), 0);
}

#[test]
fn random_keys_follow_the_seed() {
    let a = IdempotencyKey::random(&mut crate::rng::from_u64(9));
    let b = IdempotencyKey::random(&mut crate::rng::from_u64(9));
    assert_eq!(a, b);
    let mut rng = crate::rng::from_u64(9);
    let first = IdempotencyKey::random(&mut rng);
    assert_ne!(first, IdempotencyKey::random(&mut rng));
    // Two draws, high half first, with only the version and variant bits overwritten.
    let mut raw = crate::rng::from_u64(9);
    let hi = u128::from(raw.next_u64());
    let lo = u128::from(raw.next_u64());
    let mask = !(0xf << 76) & !(0xc << 60);
    assert_eq!(first.as_u128() & mask, (hi << 64 | lo) & mask);
}

#[test]
fn display_parse_and_debug() {
    let k = IdempotencyKey::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
    assert_eq!(k.to_string(), "01234567-89ab-cdef-fedc-ba9876543210");
    assert_eq!(format!("{k:?}"), "01234567-89ab-cdef-fedc-ba9876543210");
    let mut buf = [0u8; 36];
    assert_eq!(k.as_str(&mut buf), "01234567-89ab-cdef-fedc-ba9876543210");
    assert_eq!(
        IdempotencyKey::parse(b"01234567-89ab-cdef-fedc-ba9876543210"),
        Some(k)
    );
    assert_eq!(
        "01234567-89AB-CDEF-FEDC-BA9876543210".parse::<IdempotencyKey>(),
        Ok(k)
    );
    assert_eq!(IdempotencyKey::from_u128(k.as_u128()), k);
    assert_eq!(
        IdempotencyKey::from_u128(u128::MAX).to_string(),
        "ffffffff-ffff-ffff-ffff-ffffffffffff"
    );
    assert_eq!(
        IdempotencyKey::from_u128(0).to_string(),
        "00000000-0000-0000-0000-000000000000"
    );
}

#[test]
fn parse_rejects_other_shapes() {
    for bad in [
        &b""[..],
        b"01234567-89ab-cdef-fedc-ba987654321",
        b"01234567-89ab-cdef-fedc-ba98765432100",
        b"0123456789abcdeffedcba9876543210",
        b"01234567089ab-cdef-fedc-ba987654321",
        b"01234567-89ab-cdef-fedc+ba9876543210",
        b"0123456g-89ab-cdef-fedc-ba9876543210",
        b"-1234567-89ab-cdef-fedc-ba9876543210",
        b"{1234567-89ab-cdef-fedc-ba987654321}",
        "01234567-89ab-cdef-fedc-ba98765432\u{e9}".as_bytes(),
    ] {
        assert_eq!(IdempotencyKey::parse(bad), None, "{bad:?}");
    }
    assert_eq!("nope".parse::<IdempotencyKey>(), Err(ParseKeyError));
    assert!(!ParseKeyError.to_string().is_empty());
}

#[test]
fn config_defaults_and_validation() {
    let c = StoreConfig::default();
    assert_eq!(c.ttl, Duration::from_secs(86_400));
    assert_eq!(c.lease, Duration::from_secs(600));
    assert_eq!(c.capacity, 100_000);
    assert_eq!(c.validate(), Ok(()));
    let field = |c: StoreConfig| c.validate().map_err(|e| e.field());
    assert_eq!(
        field(StoreConfig { capacity: 0, ..c }),
        Err("idempotency.capacity")
    );
    assert_eq!(
        field(StoreConfig {
            ttl: Duration::ZERO,
            ..c
        }),
        Err("idempotency.ttl")
    );
    assert_eq!(
        field(StoreConfig {
            lease: Duration::ZERO,
            ..c
        }),
        Err("idempotency.lease")
    );
}

proptest::proptest! {
    #[test]
    fn display_parse_round_trip(bits in proptest::num::u128::ANY) {
        let k = IdempotencyKey::from_u128(bits);
        let s = k.to_string();
        proptest::prop_assert_eq!(s.len(), 36);
        proptest::prop_assert_eq!(s.to_lowercase(), s.clone());
        proptest::prop_assert_eq!(IdempotencyKey::parse(s.as_bytes()), Some(k));
        proptest::prop_assert_eq!(IdempotencyKey::parse(s.to_uppercase().as_bytes()), Some(k));
    }
}

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use crate::duration::Human;

    #[test]
    fn key_is_a_string() {
        let k = IdempotencyKey::from_business_id(b"order-42");
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(json, "\"37664fd1-64f1-842c-9001-83e936ed15fb\"");
        assert_eq!(serde_json::from_str::<IdempotencyKey>(&json).unwrap(), k);
        assert!(serde_json::from_str::<IdempotencyKey>("\"nope\"").is_err());
        assert!(serde_json::from_str::<IdempotencyKey>("12").is_err());
    }

    #[test]
    fn default_config_serializes() {
        let json = serde_json::to_string(&StoreConfig::default()).unwrap();
        let expected = format!(
            "{{\"ttl\":\"{}\",\"lease\":\"{}\",\"capacity\":100000}}",
            Human(Duration::from_secs(86_400)),
            Human(Duration::from_secs(600))
        );
        assert_eq!(json, expected);
        let toml = toml::to_string(&StoreConfig::default()).unwrap();
        assert!(toml.contains("capacity = 100000"), "{toml}");
    }

    #[test]
    fn config_reads_without_durations() {
        let c: StoreConfig = toml::from_str("capacity = 5").unwrap();
        assert_eq!(
            c,
            StoreConfig {
                capacity: 5,
                ..StoreConfig::default()
            }
        );
        assert!(toml::from_str::<StoreConfig>("capasity = 5").is_err());
    }

    #[test]
    fn config_round_trips() {
        let c = StoreConfig {
            ttl: Duration::from_secs(3_600),
            lease: Duration::from_millis(1_500),
            capacity: 7,
        };
        let text = toml::to_string(&c).unwrap();
        assert_eq!(toml::from_str::<StoreConfig>(&text).unwrap(), c);
    }
}

#[cfg(feature = "alloc")]
mod store {
    use super::*;
    use alloc::collections::BTreeMap;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_millis(n)
    }

    fn k(n: u8) -> IdempotencyKey {
        IdempotencyKey::from_business_id(&[n])
    }

    fn store(ttl_ms: u64, lease_ms: u64, capacity: usize) -> MemoryStore<u32> {
        MemoryStore::new(&StoreConfig {
            ttl: Duration::from_millis(ttl_ms),
            lease: Duration::from_millis(lease_ms),
            capacity,
        })
        .unwrap()
    }

    #[test]
    fn begin_complete_and_expire() {
        let mut s = store(1_000, 100, 10);
        assert!(s.is_empty());
        assert_eq!(s.begin(ms(0), k(1)), Begin::New);
        assert_eq!(
            s.begin(ms(50), k(1)),
            Begin::InFlight {
                lease_until: ms(100)
            }
        );
        s.complete(ms(60), k(1), 7);
        assert_eq!(s.begin(ms(60), k(1)), Begin::Done(7));
        assert_eq!(s.begin(ms(1_059), k(1)), Begin::Done(7));
        assert_eq!(s.len(), 1);
        // The result expires ttl after complete (60 + 1000).
        assert_eq!(s.begin(ms(1_060), k(1)), Begin::New);
        assert_eq!(
            s.begin(ms(1_061), k(1)),
            Begin::InFlight {
                lease_until: ms(1_160)
            }
        );
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_lapsed_lease_is_taken_over() {
        let mut s = store(1_000, 100, 10);
        assert_eq!(s.begin(ms(10), k(1)), Begin::New);
        assert_eq!(
            s.begin(ms(109), k(1)),
            Begin::InFlight {
                lease_until: ms(110)
            }
        );
        assert_eq!(s.begin(ms(110), k(1)), Begin::New);
        assert_eq!(
            s.begin(ms(111), k(1)),
            Begin::InFlight {
                lease_until: ms(210)
            }
        );
        // The first owner finishes late: its result is recorded all the same.
        s.complete(ms(150), k(1), 1);
        assert_eq!(s.begin(ms(151), k(1)), Begin::Done(1));
        // The second owner's result does not replace the first one.
        s.complete(ms(160), k(1), 2);
        assert_eq!(s.begin(ms(161), k(1)), Begin::Done(1));
    }

    #[test]
    fn abandon_frees_in_flight_and_keeps_done() {
        let mut s = store(1_000, 100, 10);
        assert_eq!(s.begin(ms(0), k(1)), Begin::New);
        s.abandon(ms(1), k(1));
        assert!(s.is_empty());
        assert_eq!(s.begin(ms(2), k(1)), Begin::New);
        s.complete(ms(3), k(1), 5);
        s.abandon(ms(4), k(1));
        assert_eq!(s.begin(ms(5), k(1)), Begin::Done(5));
        s.abandon(ms(6), k(2));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn complete_without_begin_is_recorded() {
        let mut s = store(1_000, 100, 10);
        s.complete(ms(0), k(3), 9);
        assert_eq!(s.begin(ms(1), k(3)), Begin::Done(9));
    }

    #[test]
    fn least_recently_used_done_record_is_evicted() {
        let mut s = store(10_000, 100, 2);
        assert_eq!(s.begin(ms(0), k(1)), Begin::New);
        s.complete(ms(1), k(1), 1);
        assert_eq!(s.begin(ms(2), k(2)), Begin::New);
        s.complete(ms(3), k(2), 2);
        // Using k1 makes k2 the least recently used.
        assert_eq!(s.begin(ms(4), k(1)), Begin::Done(1));
        assert_eq!(s.begin(ms(5), k(3)), Begin::New);
        assert_eq!(s.len(), 2);
        assert_eq!(s.begin(ms(6), k(1)), Begin::Done(1));
        // k2 is gone; taking it evicts k1, the only done record (k3 is in flight).
        assert_eq!(s.begin(ms(7), k(2)), Begin::New);
        assert_eq!(
            s.begin(ms(8), k(3)),
            Begin::InFlight {
                lease_until: ms(105)
            }
        );
        assert_eq!(
            s.begin(ms(9), k(2)),
            Begin::InFlight {
                lease_until: ms(107)
            }
        );
    }

    #[test]
    fn full_of_live_leases_is_busy_until_the_oldest_lapses() {
        let mut s = store(10_000, 100, 2);
        assert_eq!(s.begin(ms(0), k(1)), Begin::New);
        assert_eq!(s.begin(ms(30), k(2)), Begin::New);
        assert_eq!(s.begin(ms(50), k(3)), Begin::Busy { retry_at: ms(100) });
        s.complete(ms(60), k(3), 3);
        assert_eq!(s.len(), 2);
        assert_eq!(s.begin(ms(100), k(3)), Begin::New);
        assert_eq!(s.begin(ms(101), k(1)), Begin::Busy { retry_at: ms(130) });
        // Completing frees no slot, but a done record can then be evicted.
        s.complete(ms(102), k(2), 2);
        assert_eq!(s.begin(ms(103), k(1)), Begin::New);
        assert_eq!(s.begin(ms(104), k(2)), Begin::Busy { retry_at: ms(200) });
    }

    #[test]
    fn a_clock_stepping_back_is_clamped() {
        let mut s = store(1_000, 100, 10);
        assert_eq!(s.begin(ms(500), k(1)), Begin::New);
        assert_eq!(
            s.begin(ms(0), k(1)),
            Begin::InFlight {
                lease_until: ms(600)
            }
        );
        s.complete(ms(0), k(1), 1);
        assert_eq!(s.begin(ms(1_499), k(1)), Begin::Done(1));
        assert_eq!(s.begin(ms(1_500), k(1)), Begin::New);
    }

    #[test]
    fn invalid_config_is_refused() {
        let err = MemoryStore::<u32>::new(&StoreConfig {
            capacity: 0,
            ..StoreConfig::default()
        })
        .unwrap_err();
        assert_eq!(err.field(), "idempotency.capacity");
    }

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Advance(u64),
        StepBack(u64),
        Begin(u8),
        Complete(u8, u32),
        Abandon(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u64..40).prop_map(Op::Advance),
            1 => (0u64..40).prop_map(Op::StepBack),
            6 => (0u8..6).prop_map(Op::Begin),
            3 => (0u8..6, 0u32..1_000).prop_map(|(k, v)| Op::Complete(k, v)),
            2 => (0u8..6).prop_map(Op::Abandon),
        ]
    }

    #[derive(Debug, Clone)]
    enum RefState {
        Flight(Timestamp),
        Done(Timestamp, u32),
    }

    /// The store's policy written as plainly as possible: linear scans, a sequence
    /// number for "moved to the front of its list".
    struct Reference {
        ttl: Duration,
        lease: Duration,
        capacity: usize,
        latest: Timestamp,
        seq: u64,
        entries: Vec<(u8, RefState, u64)>,
    }

    impl Reference {
        fn find(&self, key: u8) -> Option<usize> {
            self.entries.iter().position(|e| e.0 == key)
        }

        fn set(&mut self, i: usize, state: RefState) {
            self.seq += 1;
            self.entries[i].1 = state;
            self.entries[i].2 = self.seq;
        }

        fn oldest(&self, flight: bool) -> Option<usize> {
            (0..self.entries.len())
                .filter(|&i| matches!(self.entries[i].1, RefState::Flight(_)) == flight)
                .min_by_key(|&i| self.entries[i].2)
        }

        fn make_room(&mut self, now: Timestamp) -> Result<(), Timestamp> {
            if self.entries.len() < self.capacity {
                return Ok(());
            }
            if let Some(i) = self.oldest(true) {
                if let RefState::Flight(until) = self.entries[i].1 {
                    if until <= now {
                        self.entries.remove(i);
                        return Ok(());
                    }
                }
            }
            if let Some(i) = self.oldest(false) {
                self.entries.remove(i);
                return Ok(());
            }
            let earliest = self
                .entries
                .iter()
                .filter_map(|e| match e.1 {
                    RefState::Flight(t) => Some(t),
                    RefState::Done(..) => None,
                })
                .min()
                .unwrap();
            Err(earliest)
        }

        fn push(&mut self, key: u8, state: RefState) {
            self.seq += 1;
            self.entries.push((key, state, self.seq));
        }

        fn begin(&mut self, now: Timestamp, key: u8) -> Begin<u32> {
            let lease = RefState::Flight(now + self.lease);
            if let Some(i) = self.find(key) {
                match self.entries[i].1 {
                    RefState::Flight(until) if now < until => {
                        return Begin::InFlight { lease_until: until };
                    }
                    RefState::Done(expires, v) if now < expires => {
                        self.set(i, RefState::Done(expires, v));
                        return Begin::Done(v);
                    }
                    _ => {}
                }
                self.set(i, lease);
                return Begin::New;
            }
            if let Err(retry_at) = self.make_room(now) {
                return Begin::Busy { retry_at };
            }
            self.push(key, lease);
            Begin::New
        }

        fn complete(&mut self, now: Timestamp, key: u8, v: u32) {
            let done = RefState::Done(now + self.ttl, v);
            if let Some(i) = self.find(key) {
                if let RefState::Done(expires, _) = self.entries[i].1 {
                    if now < expires {
                        return;
                    }
                }
                self.set(i, done);
            } else if self.make_room(now).is_ok() {
                self.push(key, done);
            }
        }

        fn abandon(&mut self, key: u8) {
            if let Some(i) = self.find(key) {
                if matches!(self.entries[i].1, RefState::Flight(_)) {
                    self.entries.remove(i);
                }
            }
        }
    }

    /// What a run answered, for comparing runs.
    #[derive(Debug, PartialEq)]
    enum Answer {
        Begin(Begin<u32>),
        Len(usize),
    }

    fn run(ops: &[Op], capacity: usize) -> Result<Vec<Answer>, TestCaseError> {
        let (ttl, lease) = (Duration::from_millis(100), Duration::from_millis(30));
        let mut s = store(100, 30, capacity);
        let mut r = Reference {
            ttl,
            lease,
            capacity,
            latest: Timestamp::ZERO,
            seq: 0,
            entries: Vec::new(),
        };
        // The owner's lease per key, from the answers alone.
        let mut owned: BTreeMap<u8, Timestamp> = BTreeMap::new();
        // The first result recorded per key while it was live, from the inputs alone.
        let mut now = ms(1_000);
        let mut answers = Vec::new();
        for &op in ops {
            match op {
                Op::Advance(d) => now = now + Duration::from_millis(d),
                Op::StepBack(d) => now = now - Duration::from_millis(d),
                Op::Begin(key) => {
                    let got = s.begin(now, k(key));
                    r.latest = r.latest.max(now);
                    let want = r.begin(r.latest, key);
                    prop_assert_eq!(got, want, "begin({}) at {}", key, now);
                    let eff = r.latest;
                    if got == Begin::New {
                        if let Some(&until) = owned.get(&key) {
                            prop_assert!(eff >= until, "second New for a live lease");
                        }
                        owned.insert(key, eff + lease);
                    }
                    if let Begin::InFlight { lease_until } = got {
                        prop_assert!(lease_until > eff);
                        prop_assert!(lease_until <= eff + lease);
                    }
                    answers.push(Answer::Begin(got));
                }
                Op::Complete(key, v) => {
                    s.complete(now, k(key), v);
                    r.latest = r.latest.max(now);
                    r.complete(r.latest, key, v);
                    owned.remove(&key);
                }
                Op::Abandon(key) => {
                    s.abandon(now, k(key));
                    r.latest = r.latest.max(now);
                    r.abandon(key);
                    owned.remove(&key);
                }
            }
            prop_assert!(s.len() <= capacity);
            prop_assert_eq!(s.len(), r.entries.len());
            answers.push(Answer::Len(s.len()));
        }
        Ok(answers)
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_1de0),
            ..ProptestConfig::default()
        })]

        #[test]
        fn store_matches_reference(
            ops in proptest::collection::vec(op(), 0..120),
            capacity in 1usize..5,
        ) {
            let first = run(&ops, capacity)?;
            let second = run(&ops, capacity)?;
            prop_assert_eq!(first, second);
        }
    }
}

#[test]
fn the_digits_go_everywhere_but_the_hyphens() {
    let places: alloc::vec::Vec<u8> = (0..36u8).filter(|&p| !is_hyphen(usize::from(p))).collect();
    let pairs: alloc::vec::Vec<u8> = BYTE_AT.iter().flat_map(|&at| [at, at + 1]).collect();
    assert_eq!(places, pairs);
}

#[test]
fn every_key_reads_back_from_its_text() {
    let mut rng = crate::rng::from_seed([3; 32]);
    let (mut buf, mut bytes) = ([0u8; 36], [0u8; 36]);
    for _ in 0..1000 {
        let k = IdempotencyKey::random(&mut rng);
        let text = k.as_str(&mut buf);
        assert_eq!(k.as_ascii(&mut bytes), text.as_bytes());
        assert_eq!(IdempotencyKey::parse(text.as_bytes()), Some(k), "{text}");
        assert!(
            text.bytes()
                .all(|b| b == b'-' || b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}
