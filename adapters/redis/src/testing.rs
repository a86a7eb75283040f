//! A real `redis-server` on 127.0.0.1 for tests (the `testing` feature): started on
//! a free port from `STEADFAST_REDIS_SERVER` or `PATH`, killed by its pid when its
//! guard drops; and the mock key the faces' shared-limit tests share
//! ([`mock_bucket`], [`bucket_policy`]). Test code only: it panics when no server can
//! be started.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use steadfast_core::limiter::LimiterConfig;
use steadfast_core::policy::Policy;
use steadfast_mock::{MockConfig, MockServer};

use crate::{RedisConfig, RedisStore};

/// A running `redis-server`, killed on drop.
pub struct Server {
    child: Child,
    /// The port it listens on.
    pub port: u16,
}

impl Server {
    /// Starts a server on a free loopback port.
    pub fn start() -> Server {
        Server::start_on(free_port())
    }

    /// Starts a server on `port` (e.g. where a killed one was).
    pub fn start_on(port: u16) -> Server {
        let binary = binary();
        let child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}; {INSTALL}", binary.display()));
        let server = Server { child, port };
        server.wait_for_pong();
        server
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (by its pid) and waits for it to exit.
    pub fn kill(mut self) -> u16 {
        self.stop();
        self.port
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wait_for_pong(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if ping(self.port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server on port {} did not answer PING", self.port);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The Redis the shared (non-fault) cases use: `STEADFAST_REDIS_URL` when set (the
/// CI's server), else a server of the test's own.
pub struct Redis {
    /// The URL.
    pub url: String,
    _own: Option<Server>,
}

impl Redis {
    /// A store on this Redis under a prefix no other test uses.
    pub fn store(&self, prefix: &str) -> RedisStore {
        store(&self.url, prefix)
    }

    /// The config of [`Redis::store`] (for a client that builds its own store).
    pub fn config(&self, prefix: &str) -> RedisConfig {
        config(&self.url, prefix)
    }

    /// The CI's server, or a new one.
    pub fn shared() -> Redis {
        if let Ok(url) = std::env::var("STEADFAST_REDIS_URL") {
            return Redis { url, _own: None };
        }
        let server = Server::start();
        Redis {
            url: server.url(),
            _own: Some(server),
        }
    }
}

/// A store on `url` with `prefix` and a generous call timeout (for tests of
/// behaviour, not latency).
pub fn store(url: &str, prefix: &str) -> RedisStore {
    RedisStore::new(config(url, prefix)).expect("store")
}

/// The config of [`store`].
pub fn config(url: &str, prefix: &str) -> RedisConfig {
    RedisConfig {
        url: url.to_string(),
        prefix: prefix.to_string(),
        call_timeout: Duration::from_secs(2),
        ..RedisConfig::default()
    }
}

/// A mock key of `rpm` requests a minute and `burst` at once (the `ok` scenario,
/// seeded with `seed`): the one limit the clients of a shared-limit test share.
pub fn mock_bucket(seed: u64, rpm: u32, burst: u32) -> MockServer {
    let mut config = MockConfig::builtin("ok").expect("ok").with_seed(seed);
    config.knobs.rpm = Some(u64::from(rpm));
    config.knobs.rate_burst = Some(u64::from(burst));
    MockServer::start(config).expect("mock")
}

/// An OpenAI endpoint named `name` on `server`, with the mock's key.
#[cfg(feature = "client")]
pub fn mock_endpoint(server: &MockServer, name: &str) -> steadfast_http::EndpointDef {
    steadfast_http::EndpointDef::new(
        server.base_url(),
        steadfast_http::Provider::OpenAi,
        steadfast_mock::MOCK_KEY,
    )
    .name(name)
}

/// The batch preset with a [`mock_bucket`]'s limit as its own (`rpm`, burst `burst`).
pub fn bucket_policy(rpm: u32, burst: u32) -> Policy {
    let mut policy = Policy::batch();
    let mut limiter = LimiterConfig::default();
    limiter.requests = Some(rpm);
    limiter.burst = f64::from(burst) / f64::from(rpm.max(1));
    policy.limiter = limiter;
    policy
}

/// A prefix unique to this process and call, so tests sharing one server never
/// see each other's keys.
pub fn unique_prefix(name: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("t{}x{n}{name}", std::process::id())
}

const INSTALL: &str =
    "install redis-server (apt-get install redis-server) or set STEADFAST_REDIS_SERVER to its path";

/// `redis-server` from `STEADFAST_REDIS_SERVER` or `PATH`; fails the test when
/// neither has one.
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STEADFAST_REDIS_SERVER") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("redis-server"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| panic!("redis-server is not on PATH; {INSTALL}"))
}

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// Keeps the Redis on `port` busy for `span`: a script that spins, so that every
/// other client's commands wait behind it. The script is sent before this returns;
/// join the handle to wait for its end.
pub fn stall(port: u16, span: Duration) -> std::thread::JoinHandle<()> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis");
    let micros = span.as_micros();
    let script = format!(
        "local t = redis.call('TIME') local e = t[1] * 1000000 + t[2] + {micros} \
         repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= e return 1"
    );
    let command = format!(
        "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n",
        script.len()
    );
    s.write_all(command.as_bytes()).expect("send the script");
    std::thread::spawn(move || {
        let _ = s.set_read_timeout(Some(span.saturating_mul(10)));
        let mut reply = [0u8; 8];
        let _ = s.read(&mut reply);
    })
}

/// Whether a Redis on `port` answers `PING`.
pub fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}
