import Testing

/// A row of a reducer's table test: inputs given to a fresh value in order, what the last
/// one asks for, and where they leave it.
struct TableRow<Input: Sendable, Action: Equatable & Sendable, Phase: Equatable & Sendable>:
    CustomTestStringConvertible, Sendable
{
    var name: String
    var inputs: [Input]
    var actions: [Action]
    var phase: Phase
    var testDescription: String { name }
}
