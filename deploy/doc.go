// Package deploy holds no code: its tests check the ways throttled is deployed, with the
// tools that read them. dockerfile_test.go parses ../Dockerfile with BuildKit's parser;
// helm_test.go lints and renders helm/throttled with helm itself (a tool of this module's
// go.mod, pinned) and decodes every object strictly into the Kubernetes API's types, then
// compares kubernetes/throttled.yaml with what the chart renders; compose_test.go loads
// compose/docker-compose.yml with compose-go. The image of make image has its own tests
// in image/.
//
// This is a module of its own so that go-containerregistry, helm and k8s.io stay out of the
// server's go.mod: make test-deploy runs it.
package deploy
