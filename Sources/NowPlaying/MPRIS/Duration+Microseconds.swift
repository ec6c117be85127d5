extension Duration {
    /// Whole microseconds, truncated toward zero, saturating at the Int64 range.
    package var microseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = product.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : sum
    }
}
