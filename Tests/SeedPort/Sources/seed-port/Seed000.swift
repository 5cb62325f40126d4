// Seed 000 (iOS指纹解锁TouchID): evaluateAuthenticate, from Objective-C.
import Foundation
import LocalAuthentication

func evaluateAuthenticate() {
    //iOS 8以上才支持指纹识别接口
    if (UIDevice.current.systemVersion as NSString).floatValue < 8 {
        NSLog("不支持TouchID (版本必须高于iOS 8.0才能使用)")
        return
    }

    //创建LAContext
    let context = LAContext()
    context.localizedFallbackTitle = "输入密码吧"

    var error: NSError? = nil

    //判断设备支持状态
    if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) {
        //支持指纹验证
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "请验证已有手机指纹") { success, error in
            if success {
                //验证成功,主线程处理UI
                OperationQueue.main.addOperation {
                    NSLog("指纹验证成功")
                }
            } else {
                NSLog("验证失败 == \(error!.localizedDescription)")
                switch (error! as NSError).code {
                case LAError.systemCancel.rawValue:
                    NSLog("系统取消授权,如其他APP切入")
                case LAError.userCancel.rawValue:
                    NSLog("用户取消验证,点击了取消按钮")
                case LAError.userFallback.rawValue:
                    NSLog("用户取消验证,点击了输入密码按钮")
                    OperationQueue.main.addOperation {
                        //用户选择输入密码,切换主线程处理
                    }
                case LAError.authenticationFailed.rawValue:
                    NSLog("连续三次指纹验证失败,可能指纹模糊或用错手指")
                case LAError.touchIDLockout.rawValue:
                    NSLog("设备TouchID被锁定,因为失败的次数太多了")
                default:
                    NSLog("设备TouchID不可用。。。")
                    OperationQueue.main.addOperation {
                        //其他情况,切换主线程处理
                    }
                }
            }
        }
    } else {
        //该设备不支持TouchID
        NSLog("不支持TouchID == \(error!.localizedDescription)")
        switch error!.code {
        case LAError.touchIDNotEnrolled.rawValue:
            NSLog("指纹验证无法启动,因为没有录入指纹")
        case LAError.passcodeNotSet.rawValue:
            NSLog("指纹验证无法启动,因为设备没有设置密码")
        case LAError.touchIDLockout.rawValue:
            NSLog("设备TouchID被锁定,因为失败的次数太多了")
        default:
            NSLog("设备TouchID不可用。。。")
        }
    }
}
