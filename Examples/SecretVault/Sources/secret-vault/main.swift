// secret-vault: a secret kept behind a right in the system's rights store.
//
//   secret-vault save NAME SECRET [biometry|current|default|passcode]
//                                    saves SECRET behind a new right (default: biometry)
//   secret-vault open NAME           asks for the finger, then prints the secret
//   secret-vault sign NAME MESSAGE   asks for the finger, then signs MESSAGE with the
//                                    right's key; prints the public key and the signature
//   secret-vault open-handlers NAME  the same as open, with the completion-handler forms
//   secret-vault peek NAME           loads the secret without authorizing (refused)
//   secret-vault open-beside NAME    asks for the finger for one right object of NAME, then
//                                    loads the secret through another object of NAME that
//                                    was not authorized (refused, as on Apple's platforms:
//                                    `BESIDE code=N`), then through the first
//   secret-vault check NAME          whether the right can be authorized now
//   secret-vault hold NAME           asks for the finger, then keeps the right authorized
//                                    until a line is typed
//   secret-vault remove NAME         asks for the finger, then removes the right
//   secret-vault remove-all NAME...  asks for the finger for each NAME, then removes every
//                                    right of the vault (refused while one is not authorized)
//
// Output lines for scripts: `SECRET text`, `PUBLIC hex`, `SIGNATURE hex`, `OK what`, and on
// failure `ERROR code=N domain=D desc` (exit status 1).
import Foundation
import LocalAuthentication

func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

func requirement(_ word: String) -> LAAuthenticationRequirement? {
    switch word {
    case "biometry": return .biometry
    case "current": return .biometryCurrentSet
    case "default": return .default
    case "passcode": return .biometry(fallback: .devicePasscode)
    default: return nil
    }
}

func run(_ args: [String]) async throws {
    let store = LARightStore.shared
    switch (args.first ?? "", args.count) {
    case ("save", 3), ("save", 4):
        guard let req = requirement(args.count == 4 ? args[3] : "biometry") else { throw Usage() }
        let right = try await store.saveRight(LARight(requirement: req), identifier: args[1],
                                              secret: Data(args[2].utf8))
        print("PUBLIC \(hex(try await right.key.publicKey.export()))")
        print("OK saved \(args[1])")
    case ("open", 2):
        let right = try await store.right(forIdentifier: args[1])
        try await right.authorize(localizedReason: "Open the vault \(args[1])")
        let secret = try await right.secret.loadData()
        print("SECRET \(String(decoding: secret, as: UTF8.self))")
        await right.deauthorize()
    case ("sign", 3):
        let right = try await store.right(forIdentifier: args[1])
        try await right.authorize(localizedReason: "Sign with the vault \(args[1])")
        guard right.key.canSign(using: .ecdsaSignatureMessageX962SHA256) else { throw Usage() }
        let signature = try await right.key.sign(Data(args[2].utf8), algorithm: .ecdsaSignatureMessageX962SHA256)
        print("PUBLIC \(hex(try await right.key.publicKey.export()))")
        print("SIGNATURE \(hex(signature))")
        try await right.key.publicKey.verify(Data(args[2].utf8), signature: signature,
                                             algorithm: .ecdsaSignatureMessageX962SHA256)
        print("OK verified here too")
    case ("open-handlers", 2):
        print("SECRET \(String(decoding: try await openWithHandlers(args[1]), as: UTF8.self))")
    case ("peek", 2):
        let right = try await store.right(forIdentifier: args[1])
        print("SECRET \(String(decoding: try await right.secret.loadData(), as: UTF8.self))")
    case ("open-beside", 2):
        // Another part of a program asking for the same identifier has not authorized it.
        let right = try await store.right(forIdentifier: args[1])
        try await right.authorize(localizedReason: "Open the vault \(args[1])")
        let beside = try await store.right(forIdentifier: args[1])
        do {
            let data = try await beside.secret.loadData()
            print("BESIDE SECRET \(String(decoding: data, as: UTF8.self))")
        } catch {
            print("BESIDE code=\((error as NSError).code)")
        }
        print("SECRET \(String(decoding: try await right.secret.loadData(), as: UTF8.self))")
        await right.deauthorize()
    case ("check", 2):
        try await store.right(forIdentifier: args[1]).checkCanAuthorize()
        print("OK can authorize")
    case ("hold", 2):
        // Authorized until a line comes on standard input (an app that keeps a right open).
        let right = try await store.right(forIdentifier: args[1])
        try await right.authorize(localizedReason: "Open the vault \(args[1])")
        print("AUTHORIZED \(args[1])")
        _ = readLine()
        await right.deauthorize()
    case ("remove", 2):
        // Removing a right needs what reading it needs: this process authorized it.
        let right = try await store.right(forIdentifier: args[1])
        try await right.authorize(localizedReason: "Remove \(args[1]) from the vault")
        try await store.removeRight(right)
        print("OK removed \(args[1])")
    case ("remove-all", _):
        // Every right of the vault, each authorized by this process first (named here:
        // the store does not list them).
        for name in args.dropFirst() {
            try await store.right(forIdentifier: name).authorize(localizedReason: "Remove \(name) from the vault")
        }
        try await store.removeAllRights()
        print("OK removed all")
    default:
        throw Usage()
    }
}

struct Usage: Error {}

/// `open` as code from before `async` writes it: one completion handler inside another.
func openWithHandlers(_ name: String) async throws -> Data {
    try await withCheckedThrowingContinuation { (done: CheckedContinuation<Data, Error>) in
        LARightStore.shared.right(forIdentifier: name) { right, error in
            guard let right else { return done.resume(throwing: error!) }
            right.authorize(localizedReason: "Open the vault \(name)") { error in
                if let error { return done.resume(throwing: error) }
                right.secret.loadData { data, error in
                    right.deauthorize {
                        if let data { done.resume(returning: data) } else { done.resume(throwing: error!) }
                    }
                }
            }
        }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let done = DispatchSemaphore(value: 0)
Task.detached {
    do {
        try await run(arguments)
        exit(0)
    } catch is Usage {
        print("usage: secret-vault save NAME SECRET [biometry|current|default|passcode] | open[-handlers] NAME"
              + " | sign NAME MESSAGE | peek NAME | open-beside NAME | check NAME | hold NAME | remove NAME | remove-all NAME...")
        exit(64)
    } catch {
        let ns = error as NSError
        if let debug = ns.userInfo["NSDebugDescription"] as? String { print("DEBUG \(debug)") }
        print("ERROR code=\(ns.code) domain=\(ns.domain) \(ns.localizedDescription)")
        exit(1)
    }
}
done.wait()
