#if canImport(Glibc)
import Glibc
#endif

/// Frames over a pair of descriptors (the helper's fd 0 and fd 1).
public final class FrameChannel {
    public let input: Int32
    public let output: Int32
    private var decoder = FrameDecoder()

    public init(input: Int32, output: Int32) {
        self.input = input
        self.output = output
    }

    /// Blocks until a whole frame has arrived. Anything malformed, or the end of the stream
    /// (in the middle of a frame or not), is an error.
    public func receive() throws(FrameError) -> Frame {
        while true {
            if let frame = try decoder.next() { return frame }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .io(errno)
            }
            if n == 0 { throw decoder.pending > 0 ? .truncated : .endOfStream }
            decoder.append(Array(chunk[0..<n]))
        }
    }

    /// Waits until input is readable (or a frame is buffered), at most `milliseconds`.
    public func waitReadable(milliseconds: Int32) -> Bool {
        if hasBufferedFrame { return true }
        var fds = [pollfd(fd: input, events: Int16(POLLIN), revents: 0)]
        return poll(&fds, 1, milliseconds) > 0
    }

    /// Whether a whole frame is already buffered (so `receive` will not block).
    public var hasBufferedFrame: Bool {
        var copy = decoder
        return (try? copy.next()) != nil
    }

    /// Writes one frame; false when the other side is gone.
    @discardableResult
    public func send(_ frame: Frame) -> Bool {
        var bytes = frame.encoded()
        defer { if frame.kind == .answer { wipe(&bytes) } }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(output, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    private func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } }
    }
}
