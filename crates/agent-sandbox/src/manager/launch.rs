//! Launching a session: the spec checked (and amended by its workspace),
//! the backend's launch, the handle's details, the session recorded.

use super::*;

impl SandboxManager {
    pub(super) fn refuse_duplicate(&self, session_id: &str) -> Result<(), Error> {
        let sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        if sessions.contains_key(session_id) {
            return Err(ErrorKind::DuplicateSession {
                session_id: session_id.to_owned(),
            }
            .into());
        }
        Ok(())
    }

    /// Launches `spec`, in `workspace` when there is one.
    #[tracing::instrument(
        name = "agent_sandbox.launch",
        skip_all,
        err(Display),
        fields(
            session_id = %spec.session_id,
            backend = %self.inner.selection.backend,
            label = self.inner.selection.label,
            workspace = workspace.is_some(),
        )
    )]
    pub(super) async fn launch_with(
        &self,
        mut spec: SandboxSpec,
        workspace: Option<Arc<Workspace>>,
    ) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        if let Some(ws) = &workspace {
            ws.amend(&mut spec)?;
        }
        self.refuse_duplicate(&spec.session_id)?;
        if let Some(path) =
            sandbox_core::git::writable_git_dir(&spec.bind_mounts, &*self.inner.settings.host)
        {
            return Err(ErrorKind::WritableGitDirectory {
                path: path.to_owned(),
            }
            .into());
        }
        let mut handle = SandboxHandle::new(spec.session_id.clone(), self.inner.selection.backend);
        handle
            .details
            .insert("label".into(), self.inner.selection.label.into());
        handle.details.insert(
            "limits".into(),
            self.inner.settings.cgroups.describe().into(),
        );
        // What the host hides in the checkout stays hidden in the view.
        let amended = workspace
            .as_deref()
            .and_then(|w| w.reads_in_view(&self.inner.settings.reads))
            .map(|reads| crate::settings::Settings {
                reads,
                ..self.inner.settings.clone()
            });
        let launched = self
            .inner
            .backend
            .launch(
                amended.as_ref().unwrap_or(&self.inner.settings),
                &spec,
                workspace.as_deref(),
            )
            .await?;
        for (key, value) in launched.details {
            handle.details.insert(key.into(), value.into());
        }
        for (key, value) in workspace.iter().flat_map(|w| w.details()) {
            handle.details.insert(key.into(), value.into());
        }
        handle.transition(SandboxState::Warm)?;
        let mut env = launched.env;
        let settings = &self.inner.settings;
        if let Some(var) =
            crate::unix_sockets::ssh_auth_sock(&settings.base_env, &settings.unix_sockets)
        {
            // The agent's socket is granted: its variable goes in too.
            env.retain(|(k, _)| *k != var.0);
            env.push(var);
        }
        let audit = settings.audit.as_ref().map(|sink| {
            crate::audit::SessionAudit::new(
                sink.clone(),
                &handle.session_id,
                self.inner.selection.label,
            )
        });
        if let Some(a) = &audit {
            a.lifecycle(true);
        }
        let session = Session {
            spec,
            env,
            backend: launched.session,
            running: None,
            runner: None,
            workspace,
            audit,
            commands: 0,
        };
        let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        sessions.insert(handle.session_id.clone(), session);
        Ok(handle)
    }
}
