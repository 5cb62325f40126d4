import Testing
@testable import LocalAuth

@Suite struct ConfigTests {
    @Test func defaults() {
        let o = Options()
        #expect(o.maxTries == 3)
        #expect(o.lockoutThreshold == 5)
    }
}
