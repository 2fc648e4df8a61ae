package netem

import "testing"

func TestProbeScratch(t *testing.T) {
	needRoot(t)
	k, err := probeScratch()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %+v; %s: %+v", k, cfg.Source, cfg)
	if k.HTB != cfg.HTB || k.Netem != cfg.Netem || k.Prio != cfg.Prio || k.U32 != cfg.U32 || k.TBF != cfg.TBF || k.NFTLoss != cfg.NFTLoss {
		t.Errorf("probe %+v disagrees with %s %+v", k, cfg.Source, cfg)
	}
}
