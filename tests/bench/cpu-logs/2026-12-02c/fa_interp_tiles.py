import os, time, importlib.util, sys, math
os.environ["TRITON_INTERPRET"]="1"
import torch
spec=importlib.util.spec_from_file_location("ref98","/work/main/reference/098-flash-attention-backward.py")
m=importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
torch.manual_seed(0)
def case(B,H,N,D,dt,causal,cfg):
    q,k,v,do=[torch.randn(B,H,N,D,dtype=dt) for _ in range(4)]
    s=q.float()@k.float().transpose(-1,-2)/math.sqrt(D)
    lse=torch.logsumexp(s,-1); o=(torch.softmax(s,-1)@v.float()).to(dt)
    t=time.perf_counter(); r=m._launch(q,k,v,o,lse,do,causal,None,*cfg); return time.perf_counter()-t, r
cfgs={"FLOAT32":m.FLOAT32,"SMALL":m.SMALL_GRID,"BIG":((64,64,4,3),(64,64,4,3)),"HUGE":((64,128,4,3),(128,64,4,3))}
shapes=[(2,3,70,32,torch.float32,False),(2,3,70,32,torch.float16,True),(1,2,17,16,torch.float32,True),(2,2,128,32,torch.float32,False),(1,1,300,16,torch.float32,True)]
for name,cfg in cfgs.items():
    tot=0; outs=[]
    for sh in shapes:
        dt,r=case(*sh,cfg); tot+=dt; outs.append(r[:3])
    print(name, round(tot,3), [round(case(*sh,cfg)[0],3) for sh in shapes])
for name,cfg in {"X":((128,128,4,1),(128,128,4,1)), "HUGE":((64,128,4,1),(128,64,4,1))}.items():
    print(name, [round(case(*sh,cfg)[0],3) for sh in shapes])
spec=importlib.util.spec_from_file_location("ref97","/work/main/reference/097-flash-attention-forward.py")
f=importlib.util.module_from_spec(spec); spec.loader.exec_module(f)
def fcase(B,H,N,D,dt,causal,cfg):
    q,k,v=[torch.randn(B,H,N,D,dtype=dt) for _ in range(3)]
    t=time.perf_counter(); f._launch(q,k,v,causal,None,*cfg); return time.perf_counter()-t
for cfg in (f.FLOAT32, f.SMALL_GRID, (128,64,4,1,False), (128,128,4,1,False)):
    print(cfg, [round(fcase(*sh,cfg),3) for sh in shapes])
