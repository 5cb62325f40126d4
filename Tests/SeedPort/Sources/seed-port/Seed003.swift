// Seed 003 (evaluatedPolicyDomainState): TouchIdManager, Swift as written in the article.
import Foundation
import LocalAuthentication

typealias TouchIdFallBackBlokc = () -> Void
/// (evaluated, success, error)
typealias TouchIdResultBlock = (Bool, Bool, Error?) -> Void

class TouchIdManager {

static var IDENTIFY:String? = nil
static let SERVICE = "TOUCHID_SERVICE"
static let ACCOUNT_PREFIX = "TOUCHID_PERFIX"
open class func setCurrentTouchIdDataIdentity(identity:String )
{
//设定当前身份用于存储data
TouchIdManager.IDENTIFY = identity
}
class func currentTouchIdDataIdentity() -> String?
{
return TouchIdManager.IDENTIFY
}
//获取当前时刻的data
class func currentOriTouchIdData() -> Data?{
let context = LAContext()
var error:NSError? = nil;
//先使用canEvaluatePolicy方法进行评估
if context.canEvaluatePolicy(LAPolicy.deviceOwnerAuthenticationWithBiometrics, error: &error) {
return context.evaluatedPolicyDomainState
}
print("errorMsg:" + self.errorMessageForFails(errorCode:(error?.code)! ))
return nil
}
//使用keychain保存当前身份的data
open class func setCurrentIdentityTouchIdData()-> Bool
{
if self.currentTouchIdDataIdentity() == nil
{
return false;
}
else
{
if self.currentOriTouchIdData() != nil
{
//storage by keychain
SAMKeychain.setPasswordData(self.currentOriTouchIdData()!, forService:SERVICE, account: ACCOUNT_PREFIX + self.currentTouchIdDataIdentity()!)
return true;
}
else
{
return false;
}
}
}
//获取当前身份的上一次存储的data，用于对比
class func currentIdentityTouchIdData()->Data?
{
guard (self.currentTouchIdDataIdentity() != nil) else {
return nil;
}
return SAMKeychain.passwordData(forService: TouchIdManager.SERVICE, account: TouchIdManager.ACCOUNT_PREFIX + self.currentTouchIdDataIdentity()!)
}
//检测以这个身份设置开始到当前时刻指纹信息是否变更
open class func touchIdInfoDidChange()->Bool
{
let data = self.currentOriTouchIdData()
if data == nil && self.isErrorTouchIDLockout() {
//lock after unlock failed many times,and the fingerprint is not changed.
return false
}
else
{
let oldData = self.currentIdentityTouchIdData()
if oldData == nil
{
//never set
return false
}
else if oldData == data
{
//not change
return false
}
else
{
return true
}
}
}
//检测当前是否为biometryLockout状态
class func isErrorTouchIDLockout()->Bool
{
let context = LAContext()
var error:NSError?
context.canEvaluatePolicy(LAPolicy.deviceOwnerAuthenticationWithBiometrics, error: &error)
guard error != nil else {
return false
}
if error!.code == LAError.biometryLockout.rawValue {
return true
}
else
{
return false
}
}
open class func showTouchId(title:String,fallbackTitle:String?, fallbackBlock:TouchIdFallBackBlokc?,resultBlock:TouchIdResultBlock?)
{
let context = LAContext();
context.localizedFallbackTitle = fallbackTitle
var useableError:NSError?
if context.canEvaluatePolicy(LAPolicy.deviceOwnerAuthenticationWithBiometrics, error: &useableError) {
context.evaluatePolicy(LAPolicy.deviceOwnerAuthenticationWithBiometrics, localizedReason: title) { (success, error) in
DispatchQueue.main.async {
if success
{
if resultBlock != nil
{
resultBlock!(true,success,error)
}
}
else
{
guard let error = error else
{
return;
}
print("errorMsg:" + self.errorMessageForFails(errorCode: error._code))
if error._code == LAError.userFallback.rawValue
{
if fallbackBlock != nil
{
fallbackBlock!()
}
}
else if error._code == LAError.biometryLockout.rawValue
{
//try to show password interface
self.tryShowTouchIdOrPwdInterface(title: title, resultBlock: resultBlock)
}
else
{
if resultBlock != nil
{
resultBlock!(true,success,error)
}
}
}
}
}
}
else
{
print("errorMsg:" + self.errorMessageForFails(errorCode:(useableError?.code)! ))
if useableError?.code == LAError.biometryLockout.rawValue
{
//try to show password interface
self.tryShowTouchIdOrPwdInterface(title: title, resultBlock: resultBlock)
}
else
{
if resultBlock != nil
{
resultBlock!(false,false,useableError)
}
}
}
}
class func tryShowTouchIdOrPwdInterface(title:String,resultBlock:TouchIdResultBlock?)
{
let context = LAContext();
context.localizedFallbackTitle = ""
var useableError:NSError?
if context.canEvaluatePolicy(LAPolicy.deviceOwnerAuthentication, error: &useableError) {
context.evaluatePolicy(LAPolicy.deviceOwnerAuthentication, localizedReason: title) { (success, error) in
DispatchQueue.main.async {
if resultBlock != nil
{
resultBlock!(true,success,error)
}
}
guard let error = error else
{
return;
}
print("errorMsg:" + self.errorMessageForFails(errorCode: error._code))
}
}
else
{
print("errorMsg:" + self.errorMessageForFails(errorCode:(useableError?.code)! ))
if resultBlock != nil
{
resultBlock!(false,false,useableError)
}
}
}

// Used by the article, not shown in it.
class func errorMessageForFails(errorCode: Int) -> String {
switch errorCode {
case LAError.authenticationFailed.rawValue: return "authentication failed"
case LAError.userCancel.rawValue: return "cancelled by the user"
case LAError.userFallback.rawValue: return "the user chose the password"
case LAError.systemCancel.rawValue: return "cancelled by the system"
case LAError.passcodeNotSet.rawValue: return "no passcode set"
case LAError.biometryNotAvailable.rawValue: return "biometry not available"
case LAError.biometryNotEnrolled.rawValue: return "no finger enrolled"
case LAError.biometryLockout.rawValue: return "biometry locked out"
case LAError.appCancel.rawValue: return "cancelled by the app"
case LAError.invalidContext.rawValue: return "invalid context"
default: return "error \(errorCode)"
}
}
}
