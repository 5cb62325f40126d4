// fingerprint-switch: the seeds' "log in with fingerprint" switch as a command-line program.
//
//   fingerprint-switch on        turn it on: a matching finger (after a lockout, the password
//                                first, then the finger), and remember the set of fingers
//   fingerprint-switch off       turn it off: a finger or the password
//   fingerprint-switch status    the switch, and whether the enrolled fingers changed since
//   fingerprint-switch login     what a login screen would do: the finger when the switch is
//                                on and the fingers did not change
//   --settings FILE              where the switch is kept (default
//                                $XDG_CONFIG_HOME/fingerprint-switch.json or ~/.config/...)
//
// Exit status 0 when the step succeeded, 1 when it did not, 64 for wrong usage.
import Foundation

var arguments = Array(CommandLine.arguments.dropFirst())
var settingsPath = Settings.defaultPath
if let i = arguments.firstIndex(of: "--settings"), i + 1 < arguments.count {
    settingsPath = arguments[i + 1]
    arguments.removeSubrange(i...(i + 1))
}
guard arguments.count == 1, let command = arguments.first,
      ["on", "off", "status", "login"].contains(command) else {
    FileHandle.standardError.write(Data("usage: fingerprint-switch on|off|status|login [--settings FILE]\n".utf8))
    exit(64)
}

var app = FingerprintSwitch(settings: Settings.load(settingsPath), path: settingsPath)
let succeeded: Bool
switch command {
case "on": succeeded = await app.turnOn()
case "off": succeeded = await app.turnOff()
case "status": succeeded = app.status()
default: succeeded = await app.login()
}
exit(succeeded ? 0 : 1)
