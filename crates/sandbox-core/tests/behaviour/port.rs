//! The `SandboxPort` trait can be implemented by a host program's own
//! backend and driven through launch, exec and destroy.

use futures_core::Stream;
use sandbox_core::*;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

/// A port that "runs" commands by echoing their argv.
struct EchoPort {
    launched: Mutex<Vec<String>>,
}

struct Events(Vec<SandboxEvent>);

impl Stream for Events {
    type Item = SandboxEvent;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<SandboxEvent>> {
        Poll::Ready(if self.0.is_empty() {
            None
        } else {
            Some(self.0.remove(0))
        })
    }
}

impl SandboxPort for EchoPort {
    type Error = Error;

    async fn launch(&self, spec: SandboxSpec) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        self.launched.lock().unwrap().push(spec.session_id.clone());
        let mut h = SandboxHandle::new(spec.session_id, SandboxBackend::None);
        h.transition(SandboxState::Warm)?;
        Ok(h)
    }

    async fn exec(
        &self,
        handle: &SandboxHandle,
        cmd: SandboxCommand,
    ) -> Result<EventStream, Error> {
        handle.state.transition(SandboxState::Active)?;
        let mut line = cmd.program.to_string_lossy().into_owned();
        for a in &cmd.args {
            line.push(' ');
            line.push_str(&a.to_string_lossy());
        }
        Ok(Box::pin(Events(vec![
            SandboxEvent::Stdout {
                data: line.into_bytes(),
            },
            SandboxEvent::Exit { exit_code: 0 },
        ])))
    }

    async fn destroy(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        handle.transition(SandboxState::Destroyed)
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn collect(mut s: EventStream) -> Vec<SandboxEvent> {
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    while let Poll::Ready(Some(e)) = s.as_mut().poll_next(&mut cx) {
        out.push(e);
    }
    out
}

#[test]
fn launch_exec_destroy() {
    let port = EchoPort {
        launched: Mutex::new(Vec::new()),
    };
    let mut h = block_on(port.launch(SandboxSpec::new("s1", "w"))).unwrap();
    assert_eq!(h.state, SandboxState::Warm);
    let mut cmd = SandboxCommand::new("echo");
    cmd.arg("hi");
    let events = collect(block_on(port.exec(&h, cmd.clone())).unwrap());
    assert_eq!(
        events,
        vec![
            SandboxEvent::Stdout {
                data: b"echo hi".to_vec()
            },
            SandboxEvent::Exit { exit_code: 0 }
        ]
    );
    block_on(port.destroy(&mut h)).unwrap();
    assert_eq!(h.state, SandboxState::Destroyed);
    assert!(
        block_on(port.exec(&h, cmd)).is_err(),
        "a destroyed handle runs nothing"
    );
    assert!(
        block_on(port.destroy(&mut h)).is_err(),
        "nothing leaves destroyed"
    );
    assert!(block_on(port.launch(SandboxSpec::new("", "w"))).is_err());
}
