import PlaybackVocabulary

extension MediaSources {
    /// The query parameters whose values are secrets, lower case: passwords, tokens, keys and
    /// signatures that stream URLs carry in place of a user name and password.
    static let secretQueryNames: Set<String> = [
        "password", "passwd", "pass", "pwd", "secret", "token", "access_token", "auth", "key", "apikey", "api_key",
        "sig", "signature",
    ]

    /// What replaces a secret.
    static let redactionMark = "***"

    /// `text` with the secrets of every URL in it replaced by `***`: the user information
    /// (`https://user:secret@host/` becomes `https://***@host/`; a user name alone can be
    /// a token) and the values of query parameters named as secrets (`?token=***`). The one
    /// function through which URLs are shown: log lines, `problems.log`, `quaver doctor` and
    /// MPRIS `xesam:url`. Only the queue Quaver plays, and the saved queue it plays after a
    /// restart, keep them.
    ///
    /// A URL starts at `scheme://` and ends at white space or a quote, punctuation that ends a
    /// sentence left out; its authority ends at
    /// the first `/`, `?` or `#`, and its user information at the last `@` in it (a password
    /// may hold an unescaped `@`). Text without `://` is returned as it is.
    public static func redactingCredentials(in text: String) -> String {
        guard text.contains("://") else { return text }
        var scalars = Array(text.unicodeScalars)
        var index = 0
        while index + 2 < scalars.count {
            guard scalars[index] == ":", scalars[index + 1] == "/", scalars[index + 2] == "/",
                index > 0, isSchemeCharacter(scalars[index - 1])
            else {
                index += 1
                continue
            }
            let authorityStart = index + 3
            var end = authorityStart
            while end < scalars.count, !endsURL(scalars[end]) { end += 1 }
            // Punctuation after a URL in a sentence ("skipping URL: reason") is not part of it.
            while end > authorityStart, ".,:;!)".unicodeScalars.contains(scalars[end - 1]) { end -= 1 }
            var authorityEnd = authorityStart
            while authorityEnd < end, !"/?#".unicodeScalars.contains(scalars[authorityEnd]) { authorityEnd += 1 }
            var redacted = Array(redactingQuery(scalars[authorityEnd..<end]))
            if let at = scalars[authorityStart..<authorityEnd].lastIndex(of: "@") {
                redacted = Array(redactionMark.unicodeScalars) + scalars[at..<authorityEnd] + redacted
            } else {
                redacted = Array(scalars[authorityStart..<authorityEnd]) + redacted
            }
            scalars.replaceSubrange(authorityStart..<end, with: redacted)
            index = authorityStart + redacted.count
        }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars)
        return String(result)
    }

    /// A URL's path, query and fragment with the values of secret query parameters replaced.
    private static func redactingQuery(_ rest: ArraySlice<Unicode.Scalar>) -> [Unicode.Scalar] {
        guard let question = rest.firstIndex(of: "?") else { return Array(rest) }
        let queryEnd = rest[question...].firstIndex(of: "#") ?? rest.endIndex
        var result = Array(rest[...question])
        let parameters = rest[(question + 1)..<queryEnd].split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "&" || $0 == ";" })
        var offset = question + 1
        for (number, parameter) in parameters.enumerated() {
            if number > 0 { result.append(rest[offset - 1]) }  // the separator as written
            offset += parameter.count + 1
            guard let equals = parameter.firstIndex(of: "=") else {
                result += parameter
                continue
            }
            var name = String.UnicodeScalarView()
            name.append(contentsOf: parameter[..<equals])
            let isSecret = secretQueryNames.contains(String(name).lowercased())
            result += parameter[...equals]
            if isSecret { result += redactionMark.unicodeScalars } else { result += parameter[(equals + 1)...] }
        }
        return result + rest[queryEnd...]
    }

    private static func isSchemeCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII
            && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "+-.".unicodeScalars.contains(scalar))
    }

    private static func endsURL(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || "\"'<>`".unicodeScalars.contains(scalar)
    }
}
