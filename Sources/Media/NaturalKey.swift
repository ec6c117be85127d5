/// A sort key for natural order, computed once per name: the lower-cased UTF-8 bytes with
/// each run of ASCII digits replaced by `0`, its significant length (4 bytes) and its
/// significant digits, so that byte order is natural order (`2` before `10`); ties are
/// broken by the name itself, which makes the order total.
struct NaturalKey: Comparable {
    let bytes: [UInt8]
    let name: String

    init(_ name: String) {
        self.name = name
        let lower = Array(name.lowercased().utf8)
        var key: [UInt8] = []
        key.reserveCapacity(lower.count + 8)
        var index = 0
        while index < lower.count {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(lower[index]) else {
                key.append(lower[index])
                index += 1
                continue
            }
            var end = index
            while end < lower.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(lower[end]) { end += 1 }
            var first = index
            while first < end - 1, lower[first] == UInt8(ascii: "0") { first += 1 }
            if first == end - 1 && lower[first] == UInt8(ascii: "0") { first = end }  // all zeros: the number 0
            let length = UInt32(end - first)
            key.append(UInt8(ascii: "0"))
            key += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            key += lower[first..<end]
            index = end
        }
        bytes = key
    }

    static func < (a: NaturalKey, b: NaturalKey) -> Bool {
        if a.bytes != b.bytes { return a.bytes.lexicographicallyPrecedes(b.bytes) }
        return a.name < b.name
    }

    static func == (a: NaturalKey, b: NaturalKey) -> Bool { a.bytes == b.bytes && a.name == b.name }
}
