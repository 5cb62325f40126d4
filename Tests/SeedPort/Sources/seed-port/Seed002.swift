// Seed 002 (Fingerprint Unlock for iOS development): authenticateuser, from Objective-C.
import Foundation
import LocalAuthentication

func authenticateuser() {
    //Initializes the context object
    let context = LAContext()
    //Error Object
    var error: NSError? = nil
    let result = "Authentication is needed to access your notes."
    //First use canEvaluatePolicy to determine the device support status
    if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) {
        //Fingerprint verification supported
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: result) { success, error in
            if success {
                //Validation successful, main thread processing UI
            } else {
                NSLog("\(error!.localizedDescription)")
                switch (error! as NSError).code {
                case LAError.systemCancel.rawValue:
                    NSLog("Authentication is cancelled by the system")
                    //Switch to another app, the system cancels the verification touch ID
                case LAError.userCancel.rawValue:
                    NSLog("Authentication is cancelled by the user")
                    //User cancels authentication Touch ID
                case LAError.userFallback.rawValue:
                    NSLog("User selected to enter custom password")
                    OperationQueue.main.addOperation {
                        //The user chooses another authentication method, switches the main thread processing
                    }
                default:
                    OperationQueue.main.addOperation {
                        //Other cases, switch main thread processing
                    }
                }
            }
        }
    } else {
        //Does not support fingerprint identification, log out error details
        switch error!.code {
        case LAError.touchIDNotEnrolled.rawValue:
            NSLog("TouchID is not enrolled")
        case LAError.passcodeNotSet.rawValue:
            NSLog("A passcode has not been set")
        default:
            NSLog("TouchID not available")
        }
        NSLog("\(error!.localizedDescription)")
        showPasswordAlert()
    }
}

func showPasswordAlert() {
    print("password alert")
}
