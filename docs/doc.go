// Package docs is throttled's manual: one Markdown page per topic, beside README.md at the
// root of the repository. It holds no code. Its test reads every page and the README, finds
// each fenced console session (a ```console block of `$ redis-cli ...` lines, each followed
// by the reply redis-cli prints), starts one server per page on 127.0.0.1 with a clock that
// stands still, runs each command through the real redis-cli and requires the reply the page
// shows, so that the manual cannot drift from the server. Another test follows every relative
// link of the pages to a file that exists and a heading that makes its anchor.
package docs
