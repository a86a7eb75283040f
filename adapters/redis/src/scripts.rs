//! The Lua scripts, one per decision, each atomic on the server.
//!
//! Every limit script reads the server's clock once (`TIME`, microseconds) and
//! returns it, so the reference model ([`crate::model`]) can replay the decision at
//! exactly that instant. Lua numbers are doubles: every value stays an integer below
//! 2^53 (see [`crate::rate`]), and `math.floor(a / b)` of such integers is exact.
//! State is written with `%.0f`, never `tostring`, which would round to 14 digits.
//!
//! No script calls `redis.replicate_commands()`: since Redis 5 scripts replicate
//! their effects (the writes), not the script, so reading `TIME` before writing is
//! allowed; Redis 7 removed the other mode. The store needs Redis ≥ 6.
//!
//! The first line of each script names it with the layout version (`sf1:...`): a v2
//! script has another body, hence another SHA, and never runs on v1 keys.

use crate::ids::LAYOUT_VERSION;
use redis::Script;
use std::sync::LazyLock;

/// Helpers every limit script starts with.
const PRELUDE: &str = r"
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function int(x) return string.format('%.0f', x) end
local function px(us) return int(math.floor((us + 999) / 1000)) end
local function tat_at(key, now)
  local tat = tonumber(redis.call('GET', key) or 0)
  if tat < now then return now end
  return tat
end
local function bucket(key, cap)
  local s = redis.call('HMGET', key, 'l', 't')
  if s[1] and s[2] then return tonumber(s[1]), tonumber(s[2]) end
  return cap, 0
end
local function refill(level, last, now, rate, cap)
  if level >= cap then return cap end
  local elapsed = now - last
  if elapsed <= 0 then return level end
  local need = math.floor((cap - level + rate - 1) / rate)
  if elapsed >= need then return cap end
  return level + elapsed * rate
end
local function store_bucket(key, level, now, rate, cap)
  if level >= cap then
    redis.call('DEL', key)
    return
  end
  redis.call('HSET', key, 'l', int(level), 't', int(now))
  redis.call('PEXPIRE', key, px(math.floor((cap - level + rate - 1) / rate)))
end
";

/// KEYS: req. ARGV: interval µs, burst, n.
/// Returns `{granted 0|n, now, tat after, wait µs}`.
const GCRA_RESERVE: &str = r"
local now = now_us()
local interval, burst, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tat_at(KEYS[1], now)
local limit_at = now + burst * interval
local new_tat = tat + n * interval
if new_tat > limit_at then return {0, now, tat, new_tat - limit_at} end
redis.call('SET', KEYS[1], int(new_tat), 'PX', px(new_tat - now))
return {n, now, new_tat, 0}
";

/// KEYS: req. ARGV: interval µs, burst, want, divisor.
/// Returns `{granted, now, tat after, wait µs, expires µs}`.
const LEASE: &str = r"
local now = now_us()
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local want, divisor = tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = tat_at(KEYS[1], now)
local limit_at = now + burst * interval
local avail = 0
if limit_at > tat then avail = math.floor((limit_at - tat) / interval) end
if avail == 0 then return {0, now, tat, tat + interval - limit_at, 0} end
local grant = math.floor(avail / divisor)
if grant < 1 then grant = 1 end
if grant > want then grant = want end
local new_tat = tat + grant * interval
redis.call('SET', KEYS[1], int(new_tat), 'PX', px(new_tat - now))
return {grant, now, new_tat, 0, now + grant * interval}
";

/// KEYS: req. ARGV: interval µs, unused, lease expiry µs.
/// Returns `{refunded, now, tat after}`.
const RELEASE_LEASE: &str = r"
local now = now_us()
local interval, unused, expires = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tat_at(KEYS[1], now)
if now >= expires or tat <= now or unused == 0 then return {0, now, tat} end
local new_tat = tat - unused * interval
if new_tat <= now then
  redis.call('DEL', KEYS[1])
  return {unused, now, now}
end
redis.call('SET', KEYS[1], int(new_tat), 'PX', px(new_tat - now))
return {unused, now, new_tat}
";

/// KEYS: tok. ARGV: rate units/µs, cap units, cost units.
/// Returns `{granted 0|1, now, level after, wait µs}`.
const TOKENS_RESERVE: &str = r"
local now = now_us()
local rate, cap, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local level, last = bucket(KEYS[1], cap)
level = refill(level, last, now, rate, cap)
if level < cost then return {0, now, level, math.floor((cost - level + rate - 1) / rate)} end
level = level - cost
store_bucket(KEYS[1], level, now, rate, cap)
return {1, now, level, 0}
";

/// KEYS: tok. ARGV: rate units/µs, cap units, delta units (reserved − actual).
/// Returns `{now, level after}`.
const TOKENS_RECONCILE: &str = r"
local now = now_us()
local rate, cap, delta = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local level, last = bucket(KEYS[1], cap)
level = refill(level, last, now, rate, cap) + delta
if level > cap then level = cap end
if level < -cap then level = -cap end
store_bucket(KEYS[1], level, now, rate, cap)
return {now, level}
";

/// KEYS: a flag key. ARGV: ms. Sets it for `ms` unless it already lives longer.
/// Returns the milliseconds it lives now.
const EXTEND_TTL: &str = r"
local left = redis.call('PTTL', KEYS[1])
local want = tonumber(ARGV[1])
if left >= want then return left end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return want
";

/// KEYS: an endpoint's open key. ARGV: ttl ms, the whole open in ms. Extends the
/// open (its TTL and the whole it records) only when the new one ends later; returns
/// the ms it lives now.
const OPEN_ENDPOINT: &str = r"
local left = redis.call('PTTL', KEYS[1])
local want = tonumber(ARGV[1])
if left >= want then return left end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
return want
";

/// KEYS: claim. ARGV: owner, ttl ms.
/// Returns `{0, ''}` won (or re-claimed by its owner, TTL renewed),
/// `{1, owner}` held by another, `{2, result}` done.
const CLAIM: &str = r"
local s = redis.call('HMGET', KEYS[1], 's', 'o', 'r')
if s[1] == 'd' then return {2, s[3]} end
if s[1] == 'h' and s[2] ~= ARGV[1] then return {1, s[2]} end
redis.call('HSET', KEYS[1], 's', 'h', 'o', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {0, ''}
";

/// KEYS: claim. ARGV: owner, result, ttl ms. Returns 1 stored, 0 not the holder.
const COMPLETE: &str = r"
local s = redis.call('HMGET', KEYS[1], 's', 'o')
if s[1] ~= 'h' or s[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', 'd', 'r', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// KEYS: claim. ARGV: owner. Returns 1 released, 0 not the holder.
const RELEASE_CLAIM: &str = r"
local s = redis.call('HMGET', KEYS[1], 's', 'o')
if s[1] ~= 'h' or s[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
";

/// The compiled scripts (their SHA1 is computed once; `EVALSHA` falls back to
/// `EVAL` after a server restart or `SCRIPT FLUSH`).
pub(crate) struct Scripts {
    pub(crate) gcra_reserve: Script,
    pub(crate) lease: Script,
    pub(crate) release_lease: Script,
    pub(crate) tokens_reserve: Script,
    pub(crate) tokens_reconcile: Script,
    pub(crate) extend_ttl: Script,
    pub(crate) open_endpoint: Script,
    pub(crate) claim: Script,
    pub(crate) complete: Script,
    pub(crate) release_claim: Script,
}

fn limit_script(name: &str, body: &str) -> Script {
    Script::new(&format!(
        "-- steadfast sf{LAYOUT_VERSION}:{name}\n{PRELUDE}{body}"
    ))
}

fn plain_script(name: &str, body: &str) -> Script {
    Script::new(&format!("-- steadfast sf{LAYOUT_VERSION}:{name}\n{body}"))
}

/// The scripts, built on first use.
pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    gcra_reserve: limit_script("gcra_reserve", GCRA_RESERVE),
    lease: limit_script("lease", LEASE),
    release_lease: limit_script("release_lease", RELEASE_LEASE),
    tokens_reserve: limit_script("tokens_reserve", TOKENS_RESERVE),
    tokens_reconcile: limit_script("tokens_reconcile", TOKENS_RECONCILE),
    extend_ttl: plain_script("extend_ttl", EXTEND_TTL),
    open_endpoint: plain_script("open_endpoint", OPEN_ENDPOINT),
    claim: plain_script("claim", CLAIM),
    complete: plain_script("complete", COMPLETE),
    release_claim: plain_script("release_claim", RELEASE_CLAIM),
});
