// Package packaging holds what the .deb and .rpm of `make dist` install beside the binary: the
// systemd unit (throttled.service) and the maintainer scripts; the sample config is
// throttled.conf at the repository's root. GoReleaser's nfpms section in .goreleaser.yaml says
// where each goes.
//
// Its test builds the .deb with nfpm from that same section, extracts it with dpkg-deb, checks
// its files and conffiles, verifies the unit with systemd-analyze, and starts the packaged
// binary as the unit does, with the packaged config, telling a notify socket it is ready.
package packaging
