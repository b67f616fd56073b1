//! The guest's ends of the TCP streams the host relays: a listener on a
//! port of the guest's loopback, each connection there a numbered stream
//! carried over the channel.

use super::send;
use sandbox_core::vm_wire::{FromGuest, MAX_DATA};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The guest's ends of the TCP streams the host relays, by stream number.
#[derive(Default, Clone)]
pub(super) struct Streams {
    open: Arc<Mutex<HashMap<u64, std::net::TcpStream>>>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

impl Streams {
    /// Listens on `port` of the guest's loopback; each connection becomes
    /// a stream the host is told of.
    pub(super) fn listen(&self, port: u16, out: &Arc<Mutex<std::fs::File>>) {
        let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("vm-agent: listening on 127.0.0.1:{port}: {e}");
                return;
            }
        };
        let (streams, out) = (self.clone(), out.clone());
        let _ = std::thread::Builder::new()
            .name("listener".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    streams.opened(conn, port, &out);
                }
            });
    }

    fn opened(&self, conn: std::net::TcpStream, port: u16, out: &Arc<Mutex<std::fs::File>>) {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let Ok(reading) = conn.try_clone() else {
            return;
        };
        if let Ok(mut open) = self.open.lock() {
            open.insert(id, conn);
        }
        send(out, &FromGuest::TcpOpen { conn: id, port });
        let (streams, out) = (self.clone(), out.clone());
        let _ = std::thread::Builder::new()
            .name("stream".into())
            .spawn(move || {
                let mut reading = reading;
                let mut buf = vec![0u8; MAX_DATA];
                loop {
                    match reading.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => send(
                            &out,
                            &FromGuest::TcpData {
                                conn: id,
                                data: buf.get(..n).unwrap_or_default().to_vec(),
                            },
                        ),
                    }
                }
                send(&out, &FromGuest::TcpClose { conn: id });
                // Its writing side stays until the host closes too.
                let _ = streams;
            });
    }

    /// Bytes from the host for stream `id` (blocking: a guest program that
    /// does not read holds the host's later messages back).
    pub(super) fn data(&self, id: u64, data: &[u8]) {
        let conn = self
            .open
            .lock()
            .ok()
            .and_then(|o| o.get(&id).and_then(|c| c.try_clone().ok()));
        if let Some(mut c) = conn {
            let _ = c.write_all(data);
        }
    }

    /// The host's end of stream `id` closed.
    pub(super) fn close(&self, id: u64) {
        if let Some(c) = self.open.lock().ok().and_then(|mut o| o.remove(&id)) {
            let _ = c.shutdown(std::net::Shutdown::Write);
        }
    }
}
