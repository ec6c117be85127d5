// Text helpers in place of full Foundation's `trimmingCharacters(in:)` and
// `String(format:)`: FoundationEssentials has neither, and full Foundation maps ICU and
// FoundationInternationalization into the daemon.

extension Unicode.Scalar {
    /// In Foundation's `CharacterSet.whitespaces`: general category Zs, or a tab.
    package var isSpaceOrTab: Bool {
        self == "\t" || properties.generalCategory == .spaceSeparator
    }

    /// In Foundation's `CharacterSet.whitespacesAndNewlines`: general category Z*, U+000A to
    /// U+000D, or U+0085 (a tab, too, as U+0009 is listed with the white space).
    package var isWhitespaceOrNewline: Bool {
        switch properties.generalCategory {
        case .spaceSeparator, .lineSeparator, .paragraphSeparator: return true
        default: return ("\t"..."\r").contains(self) || self == "\u{85}"
        }
    }

    /// In Foundation's `CharacterSet.punctuationCharacters`: general category P*.
    package var isPunctuation: Bool {
        switch properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
            .finalPunctuation, .otherPunctuation:
            return true
        default: return false
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs, as
    /// `trimmingCharacters(in: .whitespaces)`.
    package func trimmingSpaces() -> String { trimming(while: \.isSpaceOrTab) }

    /// The text without leading and trailing white space and line breaks, as
    /// `trimmingCharacters(in: .whitespacesAndNewlines)`.
    package func trimmingWhitespace() -> String { trimming(while: \.isWhitespaceOrNewline) }

    /// The text without the leading and trailing scalars that pass `test`.
    package func trimming(while test: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !test($0) }), let last = scalars.lastIndex(where: { !test($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}

extension Int {
    /// The number in decimal, zero-padded to `width` digits, as `String(format: "%02d")`
    /// does for a width of 2.
    package func zeroPadded(to width: Int) -> String {
        let digits = String(magnitude)
        let padding = String(repeating: "0", count: Swift.max(0, width - digits.count - (self < 0 ? 1 : 0)))
        return (self < 0 ? "-" : "") + padding + digits
    }
}

extension Double {
    /// The number with `places` decimals (0 to 3), as `String(format: "%.1f")` gives it: the
    /// exact binary value rounded half to even, the way glibc's printf does (1.25 gives
    /// "1.2", 0.15 gives "0.1", -0.01 gives "-0.0"), whatever the locale.
    package func decimalText(places: Int) -> String {
        precondition((0...3).contains(places), "decimalText gives 0 to 3 places")
        guard isFinite else { return isNaN ? "nan" : (self < 0 ? "-inf" : "inf") }
        let scale: UInt64 = [1, 10, 100, 1000][places]
        let value = magnitude
        let units: UInt64
        if value >= 0x1p63 {
            return description  // far beyond anything shown with decimals
        } else if value >= 0x1p52 {
            // Every double from 2^52 on is an integer.
            return (sign == .minus ? "-" : "") + String(UInt64(value))
                + (places > 0 ? "." + String(repeating: "0", count: places) : "")
        } else if value.isNormal {
            // value = significand / 2^shift exactly, the significand below 2^53, so
            // significand × scale (at most 1000 < 2^10) fits in 64 bits.
            let numerator = (value.significandBitPattern | 1 << 52) * scale
            let shift = UInt64(52 - Int(value.exponent))
            let quotient = numerator >> shift
            let remainder = numerator - (quotient << shift)
            let half: UInt64 = shift > 64 ? .max : 1 << (shift - 1)
            let roundsUp = shift <= 64 && (remainder > half || (remainder == half && quotient & 1 == 1))
            units = quotient + (roundsUp ? 1 : 0)
        } else {
            units = 0  // zero or subnormal: far below half of 0.001
        }
        let text = String(units / scale) + (places > 0 ? "." + Int(units % scale).zeroPadded(to: places) : "")
        return (sign == .minus ? "-" : "") + text
    }
}
