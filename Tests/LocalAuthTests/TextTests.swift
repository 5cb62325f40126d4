import Testing
@testable import LocalAuth

/// includes(): substring search without _StringProcessing (Text.swift).
@Suite struct TextTests {
    @Test func findsWhatIsThereAndOnlyThat() {
        #expect("state:      closed\n".includes("closed"))
        #expect(!"state:      open\n".includes("closed"))
        #expect("a..b".includes(".."))
        #expect(!"a.b.c".includes(".."))
        #expect("zh_tw.utf-8".includes("_tw"))
        #expect(!"clo".includes("closed"))        // shorter than the needle
        #expect("closed".includes("closed"))      // the whole text
        #expect("anything".includes(""))          // the empty needle is everywhere
        #expect("ccclosed".includes("closed"))    // a false start before the match
    }

    @Test func comparesUTF8BytesSoSubstringsWork() {
        let line = "名前: 指紋"[...]
        #expect(line.includes("指紋"))
        #expect(!line.includes("密码"))
    }
}
