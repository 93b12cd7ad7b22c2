package server

// decided counts a rate-limit decision for INFO, in all and per verb, in c's counter slot.
func (s *Server) decided(c *client, limited bool) {
	s.count(c, c.lastCmd.Load(), limited)
	if c.door != doorRESP {
		i := 0 // allowed
		if limited {
			i = 1
		}
		c.stat().byDoor[c.door][i].Add(1)
	}
}

// refunded counts units a REFUND of c's call gave back, for INFO.
func (s *Server) refunded(c *client, n int64) {
	if n > 0 {
		c.stat().refunded.Add(n)
	}
}

// count counts a decision of cmd, run by c.
func (s *Server) count(c *client, cmd *cmdEntry, limited bool) {
	sl := c.stat()
	cc := &sl.cmds[cmd.aclID]
	if limited {
		sl.denied.Add(1)
		cc.denied.Add(1)
	} else {
		sl.allowed.Add(1)
		cc.allowed.Add(1)
	}
}
