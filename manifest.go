// Package countersign holds the files at the root of the repository that the
// binary needs: the GitHub App manifest (app.yml), which `countersign
// register` posts to GitHub. The code is under app/, rules/ and cmd/.
package countersign

import _ "embed"

// AppManifest is app.yml: the App's name, webhook events and permissions.
//
//go:embed app.yml
var AppManifest []byte
