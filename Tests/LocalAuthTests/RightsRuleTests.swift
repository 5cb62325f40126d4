import Testing
@testable import LocalAuth

/// Who may use a saved right: RightsRule, every check.
@Suite struct RightsRuleTests {
    static let capability = [UInt8](repeating: 7, count: RightGrant.capabilityBytes)
    static let capabilityHex = Crypto.hex(capability)
    static let asker = RightsRule.Asker(pid: 4242, startTime: 900, bootID: "boot-a", acceptedAt: 2_000)

    static func record(_ requirement: RightRequirement = .biometry, domain: String? = nil) -> RightRecord {
        RightRecord(identifier: "notes", uid: 1000, program: "/usr/bin/notes", requirement: requirement,
                    domainState: domain, secret: [1, 2, 3], privateKey: [], publicKey: [])
    }

    static func grant(pid: Int32 = 4242, start: UInt64 = 900, boot: String = "boot-a", at: UInt64 = 1_000,
                      capability: [UInt8] = capability) -> RightGrant {
        RightGrant(pid: pid, startTime: start, bootID: boot, grantedAt: at,
                   capabilityHash: Crypto.hex(Crypto.sha256(capability)))
    }

    @Test func aGrantIsOneProcessOnOneBootBeforeItsConnection() {
        #expect(RightsRule.isThisProcess(Self.grant(), Self.asker))
        #expect(!RightsRule.isThisProcess(Self.grant(pid: 4243), Self.asker))
        #expect(!RightsRule.isThisProcess(Self.grant(start: 901), Self.asker))
        #expect(!RightsRule.isThisProcess(Self.grant(boot: "boot-b"), Self.asker))
        // A connection accepted before the grant (handed over before an exec in place).
        #expect(!RightsRule.isThisProcess(Self.grant(at: 2_000), Self.asker))
        #expect(!RightsRule.isThisProcess(Self.grant(at: 3_000), Self.asker))
        var noBoot = Self.asker
        noBoot.bootID = nil
        #expect(!RightsRule.isThisProcess(Self.grant(), noBoot))
    }

    @Test(arguments: RightRequirement.allCases)
    func onlyACurrentSetRightBindsTheEnrolledSet(_ requirement: RightRequirement) {
        let record = Self.record(requirement, domain: requirement == .biometryCurrentSet ? "set-1" : nil)
        let bound = requirement == .biometryCurrentSet
        #expect(RightsRule.stillValid(record, enrolledNow: "set-1"))
        #expect(RightsRule.stillValid(record, enrolledNow: "set-2") == !bound)
        #expect(RightsRule.stillValid(record, enrolledNow: nil) == !bound)
        #expect(RightsRule.isVoid(record, enrolled: .known("set-2")) == bound)
        #expect(RightsRule.isVoid(record, enrolled: .known(nil)) == bound)
        #expect(!RightsRule.isVoid(record, enrolled: .known("set-1")))
        #expect(!RightsRule.isVoid(record, enrolled: .unknown))
        #expect(RightsRule.matchAuthorizes(record, matchedDomainState: "set-1"))
        #expect(RightsRule.matchAuthorizes(record, matchedDomainState: "set-2") == !bound)
        #expect(RightsRule.matchAuthorizes(record, matchedDomainState: nil) == !bound)
    }

    @Test func usingARight() {
        let record = Self.record()
        func refusal(_ record: RightRecord?, _ grant: RightGrant?, capability: String? = RightsRuleTests.capabilityHex,
                     enrolled: String? = nil) -> RightsRule.Refusal? {
            RightsRule.useRefusal(record, grant: grant, asker: Self.asker, capability: capability, enrolledNow: enrolled)
        }
        #expect(refusal(record, Self.grant()) == nil)
        #expect(refusal(nil, Self.grant()) == .notFound)
        #expect(refusal(record, nil) == .notAuthorizedForProcess)
        #expect(refusal(record, Self.grant(pid: 1)) == .notAuthorizedForProcess)
        #expect(refusal(record, Self.grant(), capability: nil) == .capabilityNotPresented)
        #expect(refusal(record, Self.grant(), capability: Crypto.hex([UInt8](repeating: 8, count: 32))) == .capabilityNotPresented)
        #expect(refusal(record, Self.grant(), capability: "zz") == .capabilityNotPresented)
        // The enrolled set first: a void right is void for its own process too.
        let current = Self.record(.biometryCurrentSet, domain: "set-1")
        #expect(refusal(current, Self.grant(), enrolled: "set-1") == nil)
        #expect(refusal(current, Self.grant(), enrolled: "set-2") == .invalidated)
        #expect(refusal(current, nil, enrolled: nil) == .invalidated)
    }

    @Test func removingAllNeedsEachAuthorizedOrVoid() {
        let record = Self.record()
        let other = Crypto.hex([UInt8](repeating: 9, count: 32))
        func may(_ record: RightRecord, _ grant: RightGrant?, _ presented: [String],
                 _ enrolled: RightsRule.EnrolledSet = .unknown) -> Bool {
            RightsRule.mayRemoveInAll(record, grant: grant, asker: Self.asker, presented: presented, enrolled: enrolled)
        }
        #expect(may(record, Self.grant(), [other, Self.capabilityHex]))
        #expect(!may(record, Self.grant(), [other]))
        #expect(!may(record, Self.grant(), []))
        #expect(!may(record, nil, [Self.capabilityHex]))
        #expect(!may(record, Self.grant(start: 1), [Self.capabilityHex]))
        let current = Self.record(.biometryCurrentSet, domain: "set-1")
        #expect(may(current, nil, [], .known("set-2")))
        #expect(!may(current, nil, [], .known("set-1")))
        #expect(!may(current, nil, [], .unknown))
    }

    @Test(arguments: RightRequirement.allCases)
    func thePolicyFollowsThePassword(_ requirement: RightRequirement) {
        #expect(RightsRule.policy(requirement)
                == (requirement.allowsPassword ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics))
    }

    // MARK: which match goes into a dialog's ticket

    @Test func onlyANewFingerInPolkitsStackGoesIntoATicket() {
        #expect(DialogProof.ticketMethod(.success(.fingerprint), service: "polkit-1") == .fingerprint)
        #expect(DialogProof.ticketMethod(.success(.reused), service: "polkit-1") == nil)
        #expect(DialogProof.ticketMethod(.success(.password), service: "polkit-1") == nil)
        #expect(DialogProof.ticketMethod(.notOptedIn, service: "polkit-1") == nil)
        #expect(DialogProof.ticketMethod(.failure(EvaluationError(.authenticationFailed, cause: "x")), service: "polkit-1") == nil)
        for service in ["sudo", "login", "gdm-password", "polkit-1 ", ""] {
            #expect(DialogProof.ticketMethod(.success(.fingerprint), service: service) == nil)
            #expect(DialogProof.passwordMethod(service: service) == nil)
        }
        #expect(DialogProof.passwordMethod(service: "polkit-1") == .password)
    }

    // MARK: the program a right is bound to

    @Test func theExecutableAsTheKernelNamesIt() {
        #expect(RightsRule.executableRefusal(nil) == "its executable cannot be read from /proc")
        #expect(RightsRule.executableRefusal("/usr/bin/notes (deleted)") == "its executable was deleted or replaced")
        #expect(RightsRule.executableRefusal("/usr/bin/notes") == nil)
        #expect(RightsRule.executableRefusal("/opt/my (deleted) app/run") == nil)
    }

    @Test func theFileMustBeTheOneThatRunsAndRoots() {
        let runs = RightsRule.FileFacts(device: 8, inode: 42, regular: true, rootsFile: true)
        #expect(RightsRule.fileRefusal("/usr/bin/notes", named: runs, running: runs) == nil)
        var other = runs
        other.inode = 43
        #expect(RightsRule.fileRefusal("/usr/bin/notes", named: other, running: runs) == "/usr/bin/notes is not the file the program runs")
        other = runs
        other.device = 9
        #expect(RightsRule.fileRefusal("/usr/bin/notes", named: other, running: runs) == "/usr/bin/notes is not the file the program runs")
        var link = runs
        link.regular = false
        #expect(RightsRule.fileRefusal("/usr/bin/notes", named: link, running: runs) == "/usr/bin/notes is not the file the program runs")
        var users = runs
        users.rootsFile = false
        #expect(RightsRule.fileRefusal("/usr/bin/notes", named: users, running: runs)
                == "/usr/bin/notes must be owned by root and writable by nobody else")
    }

    @Test func anInterpreterHoldsRightsOnlyWhereAllowed() {
        #expect(RightsRule.interpreterRefusal("/usr/bin/python3.11", isInterpreter: true, allowed: false)?
                    .hasPrefix("/usr/bin/python3.11 is an interpreter or a loader") == true)
        #expect(RightsRule.interpreterRefusal("/usr/bin/python3.11", isInterpreter: true, allowed: true) == nil)
        #expect(RightsRule.interpreterRefusal("/usr/bin/notes", isInterpreter: false, allowed: false) == nil)
    }
}
