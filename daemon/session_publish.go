package daemon

// PipelineWith is c's pipeline with its fetch and review stages replaced
// and its publisher kept: a review session publishes a round it reviewed
// itself through the same plan, record and release as a daemon run.
func (c *Components) PipelineWith(fetch Fetcher, rev Reviewer) *Pipeline {
	orig := c.Pipeline
	stages := orig.stages
	stages.Fetch, stages.Review = fetch, rev
	return &Pipeline{cfg: orig.cfg, store: orig.store, log: orig.log, now: orig.now, stages: stages}
}
