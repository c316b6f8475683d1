package p4

import (
	"context"
	"strings"
)

// movedFrom fills CopyFromPath for the change's move/add files, so the
// findings of a renamed file follow it. describe names only the two
// halves of a move (move/add, move/delete), not which delete goes with
// which add; filelog's integration record of the move/add revision does
// ("moved from"). One `p4 -G -x args filelog -m1` per batch_size moved
// files, and none for a change that moved nothing.
func (a *Adapter) movedFrom(ctx context.Context, files []*describedFile) error {
	byDepot := map[string]*describedFile{}
	var specs []string
	for _, f := range files {
		if f.action != "move/add" {
			continue
		}
		byDepot[f.depot] = f
		// #rev names the move/add revision itself: -m1 lists it alone.
		specs = append(specs, f.depot+"#"+f.rev)
	}
	if len(specs) == 0 {
		return nil
	}
	// A source obliterated since is a "no such file(s)." warning for
	// nothing here, and a move/add without its record stays an add.
	return a.runBatched(ctx, specs, func(recs []Record) {
		for _, r := range recs {
			f, ok := byDepot[r.Get("depotFile")]
			if !ok {
				continue
			}
			if from := movedSource(r); from != "" {
				f.fc.CopyFromPath = vcsPath(from)
			}
		}
	}, "filelog", "-m1")
}

// movedSource is the "moved from" file among the integration records of
// a filelog record's first revision (how0,N / file0,N).
func movedSource(r Record) string {
	for _, k := range r.Keys {
		n, ok := strings.CutPrefix(k, "how0,")
		if ok && r.Get(k) == "moved from" {
			return r.Get("file0," + n)
		}
	}
	return ""
}
