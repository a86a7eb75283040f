//! A recording TCP tap in front of a server: it forwards bytes both ways and notes the
//! instant each request head arrives, so waits can be measured at the server side.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

pub struct Tap {
    addr: SocketAddr,
    arrivals: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
}

impl Tap {
    pub fn start(upstream: SocketAddr) -> Tap {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind tap");
        let addr = listener.local_addr().expect("tap addr");
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, s) = (Arc::clone(&arrivals), Arc::clone(&stop));
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else { continue };
                let a = Arc::clone(&a);
                thread::spawn(move || forward(client, upstream, a));
            }
        });
        Tap {
            addr,
            arrivals,
            stop,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// When each request head arrived, in order.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().expect("arrivals").clone()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn forward(client: TcpStream, upstream: SocketAddr, arrivals: Arc<Mutex<Vec<Instant>>>) {
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(mut c_read), Ok(mut s_write)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let back = thread::spawn(move || {
        let (mut s_read, mut c_write) = (server, client);
        let _ = std::io::copy(&mut s_read, &mut c_write);
        let _ = c_write.shutdown(Shutdown::Both);
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match c_read.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if buf.get(..5) == Some(b"POST ".as_slice()) {
            arrivals.lock().expect("arrivals").push(Instant::now());
        }
        if s_write.write_all(buf.get(..n).unwrap_or_default()).is_err() {
            break;
        }
    }
    let _ = s_write.shutdown(Shutdown::Both);
    let _ = back.join();
}
