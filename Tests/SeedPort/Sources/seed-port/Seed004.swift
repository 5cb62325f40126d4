// Seed 004 (指紋登錄開關): the settings screen's switch and the login screen, Swift as
// written in the article (see README.md for the two lines Swift 4 made necessary).
import Foundation
import LocalAuthentication

let kUseTouchID = "kUseTouchID"

final class MineViewController {
    let fingerCell = UISwitch()

    // 更新指紋登錄開關狀態
    func updateSwitch() {
        if let isOn = UserDefaults.standard.object(forKey: kUseTouchID) as? Bool {
            fingerCell.isOn = isOn
        } else {
            fingerCell.isOn = false
        }
    }

    fileprivate func changeTouchID(_ sw: UISwitch) {
        if sw.isOn {
            // 打開操作
            debugPrint("打開操作")
            self.switchIsOn(sw: sw)
        }
        else
        {
            // 關閉操作
            debugPrint("關閉操作")
            self.switchIsOff(sw: sw)
        }
    }

    func toggle(on: Bool) {
        fingerCell.isOn = on
        changeTouchID(fingerCell)
    }

    //驗證指
    func switchIsOn(sw: UISwitch)
    {
        let context = LAContext()
        var message = ""
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "通過Home鍵驗證已有的手機指紋", reply: { (success, authenticationError) in
            if success == true {
                // 校驗成功
                message = "打開成功"
                UserDefaults.standard.set(true, forKey: kUseTouchID)
                UserDefaults.standard.synchronize()
                DispatchQueue.main.async {
                    sw.isOn = true
                }
            } else {
                // 校驗失敗
                /// 取消：Canceled by user.
                /// 未開啟或設備不支持：No fingers are enrolled with Touch ID.
                // 多次校驗失敗? ? desc String? "Biometry is locked out." some
                let desc = authenticationError?.localizedDescription
                if desc?.contains("Canceled") == true {
                    message = ""
                }else if desc?.contains("retry limit exceeded") == true {
                    // 提示校驗失敗
                    message = "指紋不匹配"
                }else if desc?.contains("Biometry is") == true {
                    // 多次校驗失敗，彈出用戶輸入密碼解鎖
                    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "請輸入解鎖密碼", reply: { (success, error) in
                        if success == true {
                            // 密碼校驗成功
                            debugPrint("密碼校驗成功")
                            self.switchIsOn(sw: sw)
                        } else {
                            // 密碼校驗失敗
                            debugPrint("密碼校驗失敗")
                        }
                    })
                }else {
                    message = "您未開啟指紋功能"
                }
                DispatchQueue.main.async {
                    sw.isOn = false
                }
            }
            if message.count > 0 {
                DispatchQueue.main.async {
                    SVProgressHUD.showInfo(withStatus: message)
                    SVProgressHUD.dismiss(withDelay: 1)
                }
            }
            debugPrint(message)
        })
    }

    func switchIsOff(sw: UISwitch)
    {
        let context = LAContext()
        var message = ""
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "通過Home鍵驗證已有的手機指紋", reply: { (success, authenticationError) in
            if success == true {
                // 校驗成功
                message = "關閉成功"
                UserDefaults.standard.set(false, forKey: kUseTouchID)
                UserDefaults.standard.synchronize()
                DispatchQueue.main.async {
                    sw.isOn = false
                }
            } else {
                // 校驗失敗
                /// 取消：Canceled by user.
                /// 未開啟或設備不支持：No fingers are enrolled with Touch ID.
                // 多次校驗失敗? ? desc String? "Biometry is locked out." some
                let desc = authenticationError?.localizedDescription
                if desc?.contains("Canceled") == true {
                    message = ""
                }else if desc?.contains("retry limit exceeded") == true {
                    // 提示校驗失敗
                    message = "指紋不匹配"
                }else if desc?.contains("Biometry is") == true {
                    // 多次校驗失敗，彈出用戶輸入密碼解鎖
                    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "請輸入解鎖密碼", reply: { (success, error) in
                        if success == true {
                            // 密碼校驗成功
                            debugPrint("密碼校驗成功")
                            self.switchIsOff(sw: sw)
                        } else {
                            // 密碼校驗失敗
                            debugPrint("密碼校驗失敗")
                        }
                    })
                }else {
                    message = "指紋關閉失敗"
                }
                DispatchQueue.main.async {
                    sw.isOn = true
                }
            }
            if message.count > 0 {
                DispatchQueue.main.async {
                    SVProgressHUD.showInfo(withStatus: message)
                    SVProgressHUD.dismiss(withDelay: 1)
                }
            }
            debugPrint(message)
        })
    }
}

final class LoginViewController {
    let fingerBtn = (isHidden: false, ())

    func viewWillAppear(_ animated: Bool) {
        if let isTouchID = UserDefaults.standard.object(forKey: kUseTouchID) as? Bool {
            if isTouchID == true {
                // 開啟指紋
                self.startFinger()
            }
        }
    }

    func startFinger()
    {
        var message = ""
        let context = LAContext()
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "通過Home鍵驗證已有的手機指紋", reply: { [weak self] (success, authenticationError) in
            if success == true {
                // 校驗成功
                self?.autoLogin()
            } else {
                // 提示
                // 校驗失敗
                /// 取消：Canceled by user.
                /// 未開啟或設備不支持：No fingers are enrolled with Touch ID.
                // 三次校驗失敗：Application retry limit exceeded
                // 多次校驗失敗："Biometry is locked out."
                // Biometry is not available in passcode lockout
                let desc = authenticationError?.localizedDescription
                if desc?.contains("Canceled") == true {
                    message = ""
                } else if desc?.contains("Biometry is") == true {
                    // 多次校驗失敗，彈出用戶輸入密碼解鎖
                    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "請輸入解鎖密碼", reply: { (success, error) in
                        if success == true {
                            // 密碼校驗成功
                            debugPrint("密碼校驗成功")
                            self?.startFinger()
                        } else {
                            // 密碼校驗失敗
                            debugPrint("密碼校驗失敗")
                        }
                    })
                } else if desc?.contains("retry limit exceeded") == true {
                    // 提示校驗失敗
                    message = "指紋不匹配"
                }
            }
            if message.count > 0 {
                DispatchQueue.main.async {
                    SVProgressHUD.showInfo(withStatus: message)
                    SVProgressHUD.dismiss(withDelay: 1)
                }
            }
        })
    }

    func autoLogin() {
        print("logged in")
    }
}
