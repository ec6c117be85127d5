/// Quaver's version, in semantic versioning: the one place it is written. `quaver --version`
/// prints it, `scripts/package` names the Debian package after it, and CHANGELOG.md has an
/// entry for each one released.
enum Version {
    /// The version of this build.
    static let current = "0.2.0"
}
