// Seed 001 (如何在iOS8.0系统以上使用指纹功能): HQ_TouchID, a subclass of LAContext with a
// delegate, and the view controller's delegate methods, from Objective-C.
import Foundation
import LocalAuthentication

protocol HQ_TouchID_Delegate: AnyObject {
    //必须实现的两个代理方法:
    /// 验证成功
    func HQ_TouchID_AuthorizeSuccess()
    /// 验证失败
    func HQ_TouchID_AuthorizeFailure()

    //选择实现的代理方法:
    /// 取消了验证（点击了取消）
    func HQ_TouchID_AuthorizeUserCancel()
    /// 在TouchID对话框点击输入密码按钮
    func HQ_TouchID_AuthorizeUserFallBack()
    /// 在验证的TouchID的过程中被系统取消 例如突然来电话、按了Home键、锁屏...
    func HQ_TouchID_AuthorizeSystemCancel()
    /// 无法使用TouchID,设备没有设置密码
    func HQ_TouchID_AuthorizePasswordNotSet()
    /// 没有录入TouchID,无法使用
    func HQ_TouchID_AuthorizeTouchIDNotSet()
    /// 该设备的TouchID无效
    func HQ_TouchID_AuthorizeTouchIDNotAvailable()
    /// 多次连续使用Touch ID失败，Touch ID被锁，需要用户输入密码解锁
    func HQ_TouchID_AuthorizeTouchIDNotLockOut()
    /// 当前软件被挂起取消了授权(如突然来了电话,应用进入前台)
    func HQ_TouchID_AuthorizeTouchIDAppCancel()
    /// 当前软件被挂起取消了授权 (授权过程中,LAContext对象被释)
    func HQ_TouchID_AuthorizeTouchIDInvalidContext()
    /// 当前设备不支持指纹识别
    func HQ_TouchID_AuthorizeNotSupport()
}

// The optional methods (@optional in Objective-C).
extension HQ_TouchID_Delegate {
    func HQ_TouchID_AuthorizeUserCancel() {}
    func HQ_TouchID_AuthorizeUserFallBack() {}
    func HQ_TouchID_AuthorizeSystemCancel() {}
    func HQ_TouchID_AuthorizePasswordNotSet() {}
    func HQ_TouchID_AuthorizeTouchIDNotSet() {}
    func HQ_TouchID_AuthorizeTouchIDNotAvailable() {}
    func HQ_TouchID_AuthorizeTouchIDNotLockOut() {}
    func HQ_TouchID_AuthorizeTouchIDAppCancel() {}
    func HQ_TouchID_AuthorizeTouchIDInvalidContext() {}
    func HQ_TouchID_AuthorizeNotSupport() {}
}

class HQ_TouchID: LAContext {
    weak var delegate: HQ_TouchID_Delegate?

    /// 发起指纹验证：
    func startHQ_TouchID_WithMessage(_ message: String, FallBackTitle fallBackTitle: String, Delegate delegate: HQ_TouchID_Delegate) {
        let context = LAContext()
        context.localizedFallbackTitle = fallBackTitle

        var error: NSError? = nil
        self.delegate = delegate
        //判断代理人是否为空
        if self.delegate != nil {
            if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) {
                //使用context对象对识别的情况进行评估
                context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: message) { success, error in
                    //识别成功:
                    if success {
                        //必须回到主线程执行,否则在更新UI时会出错！以下相同
                        OperationQueue.main.addOperation {
                            self.delegate?.HQ_TouchID_AuthorizeSuccess()
                        }
                    }
                    //识别失败
                    else if let error = error {
                        NSLog("error : \(error)")
                        switch (error as NSError).code {
                        case LAError.authenticationFailed.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeFailure()
                            }
                        case LAError.userCancel.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeUserCancel()
                            }
                        case LAError.userFallback.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeUserFallBack()
                            }
                        case LAError.systemCancel.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeSystemCancel()
                            }
                        case LAError.touchIDNotEnrolled.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeTouchIDNotSet()
                            }
                        case LAError.passcodeNotSet.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizePasswordNotSet()
                            }
                        case LAError.touchIDNotAvailable.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeTouchIDNotAvailable()
                            }
                        case LAError.touchIDLockout.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeTouchIDNotLockOut()
                            }
                        case LAError.appCancel.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeTouchIDAppCancel()
                            }
                        case LAError.invalidContext.rawValue:
                            OperationQueue.main.addOperation {
                                self.delegate?.HQ_TouchID_AuthorizeTouchIDInvalidContext()
                            }
                        default:
                            break
                        }
                    }
                }
            }
            //设备不支持指纹识别
            else {
                OperationQueue.main.addOperation {
                    self.delegate?.HQ_TouchID_AuthorizeNotSupport()
                }
            }
        }
    }
}

/// The view controller's side: the button's action and the delegate methods.
final class ViewController: HQ_TouchID_Delegate {
    var touchID: HQ_TouchID?     //使用封装扩展的类
    var resultString = ""

    //按钮点击事件
    func obtainTheTouchID() {
        self.touchID = HQ_TouchID()
        //调用系统的指纹验证
        touchID?.startHQ_TouchID_WithMessage("验证指纹", FallBackTitle: "输入密码", Delegate: self)
    }

    //验证结果代理的回调方法
    func HQ_TouchID_AuthorizeSuccess() {
        presentAlertCtrWithMessage("验证成功！")
        resultString = "验证成功！"
    }

    func HQ_TouchID_AuthorizeFailure() {
        presentAlertCtrWithMessage("验证失败！")
        resultString = "验证失败！"
    }

    func HQ_TouchID_AuthorizeNotSupport() {
        presentAlertCtrWithMessage("设备不支持！")
        resultString = "设备不支持！"
    }

    func HQ_TouchID_AuthorizeUserCancel() {
        presentAlertCtrWithMessage("用户取消了验证！")
        resultString = "用户取消了验证！"
    }

    func HQ_TouchID_AuthorizeSystemCancel() {
        presentAlertCtrWithMessage("系统原因取消了验证！")
        resultString = "系统原因取消了验证！"
    }

    //警告
    func presentAlertCtrWithMessage(_ infoString: String) {
        print("温馨提示: \(infoString)")
    }
}
