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
    ) -> Result<RunningCommand, Error> {
        handle.state.transition(SandboxState::Active)?;
        let mut line = cmd.program.to_string_lossy().into_owned();
        for a in &cmd.args {
            line.push(' ');
            line.push_str(&a.to_string_lossy());
        }
        Ok(RunningCommand::from_events(Box::pin(Events(vec![
            SandboxEvent::Stdout {
                data: line.into_bytes(),
            },
            SandboxEvent::Exit { exit_code: 0 },
        ]))))
    }

    async fn destroy(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        handle.transition(SandboxState::Destroyed)
    }

    async fn suspend(&self, _handle: &mut SandboxHandle) -> Result<(), Error> {
        Err(ErrorKind::SuspendUnsupported {
            operation: "suspend",
            backend: "echo".into(),
        }
        .into())
    }

    async fn resume(&self, _handle: &mut SandboxHandle) -> Result<(), Error> {
        Err(ErrorKind::SuspendUnsupported {
            operation: "resume",
            backend: "echo".into(),
        }
        .into())
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

fn collect(s: RunningCommand) -> Vec<SandboxEvent> {
    let mut s: EventStream = s.into_events();
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

#[test]
fn a_port_behind_a_trait_object_is_chosen_at_run_time() {
    let ports: Vec<std::sync::Arc<dyn DynSandboxPort>> = vec![std::sync::Arc::new(EchoPort {
        launched: Mutex::new(Vec::new()),
    })];
    for port in &ports {
        let mut h = block_on(port.launch_dyn(SandboxSpec::new("dyn", "w"))).unwrap();
        let cmd = SandboxCommand::new("true");
        let events = collect(block_on(port.exec_dyn(&h, cmd)).unwrap());
        assert_eq!(events.last(), Some(&SandboxEvent::Exit { exit_code: 0 }));
        block_on(port.destroy_dyn(&mut h)).unwrap();
        let err = block_on(port.launch_dyn(SandboxSpec::new("", "w"))).unwrap_err();
        assert!(!err.to_string().is_empty(), "errors are boxed, not lost");
    }
}

#[test]
fn a_command_without_controls_refuses_writes_and_resizes() {
    let running = RunningCommand::from_events(Box::pin(Events(Vec::new())));
    assert!(matches!(
        block_on(running.write_stdin(b"x")),
        Err(ControlError::StdinNotPiped)
    ));
    assert!(matches!(
        running.resize(PtySize::new(24, 80).unwrap()),
        Err(ControlError::NoTerminal)
    ));
    assert!(running.signal(CommandSignal::Interrupt).is_ok(), "a no-op");
}

/// (intent, command, the error it gets or none).
#[test]
fn command_checks_table() {
    use std::time::Duration;
    let base = || SandboxCommand::new("true");
    let with = |f: &dyn Fn(&mut SandboxCommand)| {
        let mut c = base();
        f(&mut c);
        c
    };
    let cases: Vec<(&str, SandboxCommand, Option<CommandError>)> = vec![
        ("a plain command is fine", base(), None),
        (
            "no program",
            SandboxCommand::new(""),
            Some(CommandError::NoProgram),
        ),
        (
            "a zero timeout",
            with(&|c| {
                c.timeout(Duration::ZERO);
            }),
            Some(CommandError::ZeroTimeout),
        ),
        (
            "a 1 ms timeout is fine",
            with(&|c| {
                c.timeout(Duration::from_millis(1));
            }),
            None,
        ),
        (
            "a memory limit below what a process starts with",
            with(&|c| {
                c.limits(Limits {
                    memory_bytes: Some(4096),
                    ..Limits::default()
                });
            }),
            Some(CommandError::MemoryLimitTooSmall {
                bytes: 4096,
                min: MIN_MEMORY_LIMIT,
            }),
        ),
        (
            "a process limit of 0",
            with(&|c| {
                c.limits(Limits {
                    max_processes: Some(0),
                    ..Limits::default()
                });
            }),
            Some(CommandError::ZeroProcessLimit),
        ),
        (
            "a CPU limit of 0",
            with(&|c| {
                c.limits(Limits {
                    cpu_millis: Some(0),
                    ..Limits::default()
                });
            }),
            Some(CommandError::ZeroCpuLimit),
        ),
        (
            "output passed into a host file on a terminal",
            with(&|c| {
                let sink = std::fs::File::open(std::env::current_exe().unwrap()).unwrap();
                c.pty(PtySize::new(24, 80).unwrap())
                    .stdout(Stdout::PassTo(OutputSink::new(sink)));
            }),
            Some(CommandError::PassThroughOnTerminal),
        ),
        (
            "output passed into a host file without a terminal is fine",
            with(&|c| {
                let sink = std::fs::File::open(std::env::current_exe().unwrap()).unwrap();
                c.stdout(Stdout::PassTo(OutputSink::new(sink)));
            }),
            None,
        ),
        (
            "too many variables",
            with(&|c| {
                for i in 0..=MAX_COMMAND_ENV {
                    c.env(format!("V{i}"), "x");
                }
            }),
            Some(CommandError::TooManyVariables {
                count: MAX_COMMAND_ENV + 1,
                limit: MAX_COMMAND_ENV,
            }),
        ),
    ];
    for (intent, cmd, want) in cases {
        assert_eq!(cmd.validate().err(), want, "{intent}");
    }
    assert_eq!(
        PtySize::new(0, 80),
        Err(CommandError::EmptyTerminalSize { rows: 0, cols: 80 }),
        "a terminal of 0 rows does not exist"
    );
    assert_eq!(
        PtySize::new(24, 0),
        Err(CommandError::EmptyTerminalSize { rows: 24, cols: 0 }),
        "nor one of 0 columns"
    );
    let e = PtySize::new(0, 0).unwrap_err().to_string();
    assert!(
        e.contains("PtySize::clamped"),
        "the error names the way out: {e}"
    );
    assert_eq!(
        PtySize::clamped(0, 80),
        PtySize::new(1, 80).unwrap(),
        "clamping raises a 0 to 1"
    );
    assert_eq!(
        PtySize::clamped(30, 100),
        PtySize::new(30, 100).unwrap(),
        "and leaves a real size alone"
    );
}
