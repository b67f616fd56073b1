//! Workspaces (R-WORKSPACE) on the manager: launching in one or in a
//! fork of one, collecting, and which layering a workspace gets.

use super::*;

/// Workspaces (R-WORKSPACE): a task's own copy of a registered checkout.
impl SandboxManager {
    /// Launches a session for `spec` working in a workspace of its own
    /// made from `request`: the checkout's working tree and git directory
    /// as a view the session alone writes, on the request's branch,
    /// starting at the checkout's `HEAD` with its uncommitted changes. The
    /// view is mounted writable (read-only in the modes that make mounts
    /// read-only) and is the session's working directory unless `spec`
    /// names one; the checkout's object store is mounted read-only and the
    /// checkout itself is protected, so nothing of it (refs, packed-refs,
    /// index, worktrees, `info/`, objects, config, hooks) changes from
    /// inside. The session's work returns only through
    /// [`SandboxManager::collect`]. The layer lives in a directory of its
    /// own in the manager's temp dir, removed at `destroy` and swept like
    /// the session directories after a crash.
    ///
    /// The session id names the collected ref, so it must be 1 to 128 of
    /// `A-Z a-z 0-9 . _ -` ([`ErrorKind::BadWorkspaceName`]); a path that
    /// is not a main checkout with a commit is [`ErrorKind::NotACheckout`].
    pub async fn launch_in_workspace(
        &self,
        spec: SandboxSpec,
        request: &WorkspaceRequest,
    ) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        self.refuse_duplicate(&spec.session_id)?;
        let temp = self.workspace_temp_dir()?;
        let (request, id) = (request.clone(), spec.session_id.clone());
        let layering = self.workspace_layering(&temp);
        let workspace = blocking(move || Workspace::create(&request, &id, &temp, layering)).await?;
        #[cfg(target_os = "linux")]
        if let Some(why) = workspace.fallback() {
            (self.inner.settings.log)(&format!(
                "session {}: the workspace is a copy: its checkout cannot be an overlay's layer ({why})",
                spec.session_id
            ));
        }
        self.launch_with(spec, Some(Arc::new(workspace))).await
    }

    /// Launches a session for `spec` in a fork of `parent`'s workspace:
    /// what the parent's view holds now (its commits, its uncommitted
    /// changes) in a layer of its own, on the same branch name. Writes of
    /// either are never seen by the other or by another fork, and each
    /// collects on its own (`refs/sessions/<its session>/<branch>`).
    /// An overlay fork copies what the parent changed (its layer) and
    /// links the layers below, a copy fork the parent's whole view (see
    /// [`crate::WorkspaceLayering`]); a command of the parent's writing
    /// meanwhile may leave a file half written in the fork. A fork of a
    /// fork is at most 32 deep.
    pub async fn launch_fork(
        &self,
        parent: &SandboxHandle,
        spec: SandboxSpec,
    ) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        self.refuse_duplicate(&spec.session_id)?;
        let from = self.workspace_of(parent)?;
        let temp = self.workspace_temp_dir()?;
        let id = spec.session_id.clone();
        let workspace = blocking(move || from.fork(&id, &temp)).await?;
        self.launch_with(spec, Some(Arc::new(workspace))).await
    }

    /// Collects the session's branch into its registered checkout as
    /// `refs/sessions/<session>/<branch>`, through the push rule (a create,
    /// or a fast-forward of that ref; the push rule's object and size
    /// limits), and nothing else: no other ref, the index, a worktree or
    /// the config of the checkout changes. The session may go on working
    /// and collect again. Refused with [`ErrorKind::CollectRefused`] (the
    /// branch is gone or rewritten, an object is missing or damaged), the
    /// checkout unchanged. Merging is the host's to decide.
    pub async fn collect(&self, handle: &SandboxHandle) -> Result<CollectOutcome, Error> {
        let workspace = self.workspace_of(handle)?;
        let id = handle.session_id.clone();
        blocking(move || workspace.collect(&id)).await
    }

    /// The session's workspace, its disk use counted now; `None` for a
    /// session without one, or not live.
    pub fn workspace(&self, handle: &SandboxHandle) -> Option<WorkspaceInfo> {
        let sessions = self.inner.sessions.lock().ok()?;
        let ws = sessions.get(&handle.session_id)?.workspace.clone()?;
        drop(sessions);
        Some(ws.info())
    }

    fn workspace_of(&self, handle: &SandboxHandle) -> Result<Arc<Workspace>, Error> {
        let sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        let session = sessions.get(&handle.session_id).ok_or_else(|| {
            Error::from(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            })
        })?;
        session.workspace.clone().ok_or_else(|| {
            ErrorKind::NoWorkspace {
                session_id: handle.session_id.clone(),
            }
            .into()
        })
    }

    /// The overlay where the backend mounts one and this host can
    /// (tried once per process), else the copy.
    fn workspace_layering(&self, temp: &std::path::Path) -> crate::WorkspaceLayering {
        #[cfg(target_os = "linux")]
        if self.inner.backend.mounts_overlays(&self.inner.settings) {
            match crate::workspace::overlay_available(temp) {
                Ok(()) => return crate::WorkspaceLayering::Overlay,
                Err(why) => {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        (self.inner.settings.log)(&format!(
                            "workspaces are copies here (an overlay could not be mounted: {why})"
                        ));
                    });
                }
            }
        }
        let _ = temp;
        crate::WorkspaceLayering::Copy
    }

    fn workspace_temp_dir(&self) -> Result<std::path::PathBuf, Error> {
        self.inner.settings.temp_dir.clone().ok_or_else(|| {
            ErrorKind::MissingSetting {
                setting: "temp_dir",
                why: "a workspace's layer is made in the manager's temp dir",
            }
            .into()
        })
    }
}

/// Runs blocking file and git work off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::io("a workspace task", std::io::Error::other(e.to_string())))?
}
