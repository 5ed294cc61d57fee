import UnixSignals

/// Waits for the first SIGINT, SIGTERM or SIGHUP (Ctrl-C, `kill`, a closed terminal).
func waitForStopSignal() async -> UnixSignal? {
    let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup)
    for await signal in signals {
        return signal
    }
    return nil
}
