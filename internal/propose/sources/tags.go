package sources

import (
	"errors"
	"fmt"

	"github.com/Masterminds/semver/v3"

	"github.com/profilesync/profilesync/internal/propose"
)

// ErrNoVersions is matched (errors.Is) by a source none of whose tags is
// one of its versions: a tag pattern that matches none of them, or a range
// that none is in, is a mistake of the versions file, not news, and is
// reported by the source's name rather than passed over in silence.
var ErrNoVersions = errors.New("no tag is one of the source's versions")

// maxExampleTagLen bounds a tag quoted in a message.
const maxExampleTagLen = 80

// tagTally counts a source's tags by their verdict, for the message of a
// source with no version; the examples are the least tags, so that the
// message does not depend on the order the tags were listed in.
type tagTally struct {
	tags, matched, releases, versions int
	notMatched, notRelease            string
	newestOutOfRange                  *semver.Version
}

func (t *tagTally) add(tag string, v *semver.Version, verdict propose.TagVerdict) {
	t.tags++
	least := func(example *string) {
		if *example == "" || tag < *example {
			*example = tag
		}
	}
	switch verdict {
	case propose.TagNotMatched:
		least(&t.notMatched)
		return
	case propose.TagNotRelease:
		least(&t.notRelease)
		t.matched++
		return
	case propose.TagOutOfRange:
		if t.newestOutOfRange == nil || v.GreaterThan(t.newestOutOfRange) {
			t.newestOutOfRange = v
		}
	case propose.TagIsVersion:
		t.versions++
	}
	t.matched++
	t.releases++
}

// noVersions is nil when a tag is a version, else the error that says
// which of the source's rules the tags fail.
func (t *tagTally) noVersions(s *propose.Source) error {
	switch {
	case t.versions > 0:
		return nil
	case t.tags == 0:
		return fmt.Errorf("%w: the repository has no tags", ErrNoVersions)
	case t.matched == 0:
		return fmt.Errorf("%w: none of its %d tags matches tagPattern %s (%s is one)", ErrNoVersions, t.tags, s.TagPattern, quoteTag(t.notMatched))
	case t.releases == 0:
		return fmt.Errorf("%w: %d tags match tagPattern, and none is a release version, semver without pre-release or build (%s is one)",
			ErrNoVersions, t.matched, quoteTag(t.notRelease))
	default:
		return fmt.Errorf("%w: %d tags are release versions, and none is in the range versions %q (the newest is %s)",
			ErrNoVersions, t.releases, s.Versions.String(), t.newestOutOfRange.Original())
	}
}

// quoteTag quotes a tag a server sent, cut to maxExampleTagLen.
func quoteTag(tag string) string {
	if len(tag) > maxExampleTagLen {
		return fmt.Sprintf("%q…", tag[:maxExampleTagLen])
	}
	return fmt.Sprintf("%q", tag)
}
