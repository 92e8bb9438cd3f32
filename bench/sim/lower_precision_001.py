# Host simulation behind docs/TOLERANCE.md "Lower precision inside the tolerance":
# 001 at bf16 and fp32, the compare rule of src/compare.c (element bound and l2), W = 2, 4, 8.
# python3 bench/sim/lower_precision_001.py (numpy)
import numpy as np
rng=np.random.default_rng(1)
def bf16(x):
    x=np.asarray(x,np.float32); b=x.view(np.uint32).astype(np.uint64)
    r=((b+0x7fff+((b>>16)&1))>>16)<<16
    return r.astype(np.uint32).view(np.float32)
def e4m3(x):
    x=np.asarray(x,np.float64); a=np.abs(x); s=np.sign(x)
    e=np.floor(np.log2(np.maximum(a,1e-30))); e=np.clip(e,-6,8)
    q=2.0**(e-3); r=np.round(a/q)*q  # numpy round = half to even
    return (s*np.minimum(r,448)).astype(np.float32)
def int8blk(x,b=128):
    f=x.reshape(-1,b); s=np.maximum(np.abs(f).max(1,keepdims=True),1e-8)*np.float32(1/127)
    return (np.clip(np.round(f/s),-127,127)*s).reshape(x.shape).astype(np.float32)
def judge(ref,c,W,u):
    amax=np.abs(ref).max(); bound=2*u*np.abs(ref)+W*u*amax
    bad=(np.abs(c-ref)>bound).sum(); l2=np.linalg.norm(c-ref)/np.linalg.norm(ref); lim=2*u*np.sqrt(W+1)
    return bad, l2/lim
for W in (2,4,8):
    n=1<<20
    xs=[bf16(rng.standard_normal(n).astype(np.float32)) for _ in range(W)]
    ref=np.zeros(n,np.float32)
    for x in xs: ref=bf16(ref+x)   # ring order rounding each add
    u=2.0**-8
    for name,f in (("ok fp32 acc",lambda x:x),("fp8 e4m3",e4m3),("int8 blk128",int8blk)):
        acc=np.zeros(n,np.float32)
        for x in xs: acc=acc+f(x)
        c=bf16(acc); print("bf16 W=%d %-12s bad elems %7d  l2/limit %.2f"%((W,name)+judge(ref,c,W,u)))
    # fp32 dtype with bf16 transport
    xs32=[rng.standard_normal(n).astype(np.float32) for _ in range(W)]
    ref32=np.zeros(n,np.float32)
    for x in xs32: ref32=ref32+x
    u32=2.0**-24
    for name,f in (("ok",lambda x:x),("bf16 transp",bf16)):
        acc=np.zeros(n,np.float32)
        for x in xs32[::-1]: acc=acc+f(x)
        print("fp32 W=%d %-12s bad elems %7d  l2/limit %.2f"%((W,name)+judge(ref32,acc,W,u32)))
