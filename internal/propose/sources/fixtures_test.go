package sources

import "github.com/profilesync/profilesync/test/builders"

const versionsHeader = "apiVersion: versions.profilesync.io/v1alpha1\nkind: VersionSources\n"

var at = builders.Time
