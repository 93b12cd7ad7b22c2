package server

// decided counts a rate-limit decision for INFO, in all and per verb.
func (s *Server) decided(c *client, limited bool) {
	s.count(c.lastCmd.Load(), limited)
	if c.door != doorRESP {
		i := 0 // allowed
		if limited {
			i = 1
		}
		s.stats.byDoor[c.door][i].Add(1)
	}
}

// refunded counts units a REFUND gave back, for INFO.
func (s *Server) refunded(n int64) {
	if n > 0 {
		s.stats.refunded.Add(n)
	}
}

// count counts a decision of cmd.
func (s *Server) count(cmd *cmdEntry, limited bool) {
	if limited {
		s.stats.denied.Add(1)
		cmd.denied.Add(1)
	} else {
		s.stats.allowed.Add(1)
		cmd.allowed.Add(1)
	}
}
