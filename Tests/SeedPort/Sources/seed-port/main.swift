// seed-port SEED [SECONDS]: runs one seed's flow, keeping the main queue running.
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: seed-port 000|001|002|003|004-on|004-off|004-login|async [SECONDS]")
    exit(64)
}
let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 30 : 30
let mine = MineViewController()
let login = LoginViewController()
let controller = ViewController()

switch arguments[1] {
case "000": evaluateAuthenticate()
case "001": controller.obtainTheTouchID()
case "002": authenticateuser()
case "003":
    TouchIdManager.setCurrentTouchIdDataIdentity(identity: "me")
    print("stored: \(TouchIdManager.setCurrentIdentityTouchIdData())")
    print("changed: \(TouchIdManager.touchIdInfoDidChange())")
case "004-on": mine.toggle(on: true)
case "004-off": mine.toggle(on: false)
case "004-login": login.viewWillAppear(true)
case "async": unlockWithAsync()
default:
    print("unknown seed \(arguments[1])")
    exit(64)
}
RunLoop.main.run(until: Date(timeIntervalSinceNow: seconds))
