// localauthd: the resident root service behind the PAM module, the lock screens and the
// applications (docs/ARCHITECTURE.md §1). systemd starts it on the first connection to
// /run/localauth/socket (localauth.socket, Accept=no); it learns who connected from the
// kernel (SO_PEERCRED and the peer's pidfd, never a pid the peer names), and runs each
// request in a helper process of its own, outside the caller's cgroup, sandbox and session.
//
// Without systemd (the test bed, a container) `--listen PATH` binds the socket itself.
#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import LocalAuth

signal(SIGPIPE, SIG_IGN)
// fd 0-2 held open, so no connection or pidfd is ever numbered where a helper's standard
// descriptors go (Worker.start).
for fd in Int32(0)...2 where fcntl(fd, F_GETFD) < 0 {
    _ = open("/dev/null", O_RDWR)
}

let log = SyslogSink(ident: "localauthd")
let arguments: ServiceArguments
switch ServiceArguments.parse(Array(CommandLine.arguments.dropFirst())) {
case .success(let parsed): arguments = parsed
case .failure(let problem):
    let text = "localauthd: \(problem.text)\n\(ServiceArguments.usage)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

DescriptorLimit.raise(log: log)

let listener: Listener
let agentListener: Listener?
switch Listener.openAll(listen: arguments.listen, agentListen: arguments.agentListen) {
case .success(let opened): (listener, agentListener) = opened
case .failure(let problem):
    log.log(.error, "cannot listen: \(problem.text)")
    exit(1)
}

var service = Service(listener: listener, agent: agentListener.map { AgentDoor(listener: $0, perUserLimit: arguments.agentPerUserLimit,
                                                                                   startBurst: arguments.agentStartBurst,
                                                                                   startsPerSecond: arguments.agentStartsPerSecond) },
                      arguments: arguments, log: log)
// Started (the socket, the bus, the configuration): from here on only what the service's
// own code uses stays in effect (Capabilities).
Capabilities.dropUnused(log: log)
log.log(.info, "listening on \(listener.description)"
        + (agentListener.map { "; ssh-agent on \($0.description)" } ?? "; no ssh-agent socket")
        + "; requests run \(arguments.helperPath)")
_ = sd_notify(0, "READY=1")
let reason = service.run()
_ = sd_notify(0, "STOPPING=1")
// A stop that was asked for (SIGTERM, an idle exit) is a clean end; a loop that failed
// exits 1, so that systemd records the failure and starts it again (Restart=always).
log.log(service.failure == nil ? .info : .error, "stopping: \(reason)")
listener.close()
agentListener?.close()
exit(service.failure == nil ? 0 : 1)
