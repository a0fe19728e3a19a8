//! The sandbox every agent runs in: its own user, mount and network namespaces (oneshot's key,
//! trust store and state masked; a network of loopback alone whose one way out is oneshot's
//! egress proxy), Landlock inside as the second wall, the environment on the policy's list,
//! and limits on memory and processes. docs/sandbox.md says what an agent can see, reach and
//! spend.

pub mod admission;
pub mod egress;
pub mod env;
pub mod gateway;
pub mod limits;
#[cfg(target_os = "linux")]
pub mod namespace;
pub mod outfit;
pub mod pointing;
pub mod proxy;

/// Whether agents can have namespaces of their own here ([`namespace::available`]); `Err` says
/// why not.
pub fn available() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    return namespace::available();
    #[cfg(not(target_os = "linux"))]
    Err("namespaces are Linux's".to_string())
}

/// What gives an agent its way out of a network namespace of its own: it serves the listener
/// the namespace hands back (or, where there is no namespace, a port on the host's loopback)
/// and names the environment that points the agent's traffic there. The executor calls it for
/// every agent it starts with one (the invocation's `gateway`), so no caller can
/// start an agent and forget its proxy.
pub trait Gateway: Send + Sync + std::fmt::Debug {
    /// The variables that send the agent's traffic to `port` on its own loopback: the proxy
    /// variables, and its model API's base URL and placeholder key.
    fn env(&self, port: u16) -> Vec<(String, String)>;
    /// Edits the agent's `argv` to send its model requests to `port` on its own loopback
    /// (Codex's provider is set on its command line); most agents need nothing.
    fn argv(&self, argv: &mut Vec<String>, port: u16) {
        let _ = (argv, port);
    }
    /// Serves connections on `listener` (each one this agent's) until the guard is dropped,
    /// and forwards each of `forwards` (port, a listener inside the agent's network namespace)
    /// to the same port of the host's loopback.
    fn serve(
        &self,
        listener: std::net::TcpListener,
        forwards: Vec<(u16, std::net::TcpListener)>,
    ) -> Served;
    /// The ports of the host's loopback this agent must reach at the same address (its model
    /// API on a local server): forwarded into its network namespace.
    fn forwards(&self) -> Vec<u16> {
        Vec::new()
    }
}

/// A gateway's service for one agent: it ends when this is dropped.
pub struct Served(pub Box<dyn Send + Sync>);

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Served")
    }
}
