#if canImport(Glibc)
import Glibc
#endif

// localauthctl: the hand tool for users and administrators. Each subcommand lives in its
// own file and is listed in Commands.swift.
exit(Commands.run(Array(CommandLine.arguments.dropFirst())))
