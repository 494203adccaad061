import collections,sys
def load(f):
    tot=collections.Counter(); N=0
    for line in open(f):
        stack,n=line.rsplit(' ',1); n=int(n); N+=n
        for fr in set(stack.split(';')): tot[fr]+=n
    return N,tot
for f in sys.argv[2:]:
    N,tot=load(f); print('=====',f,'samples',N)
    for k,n in tot.most_common(int(sys.argv[1])): print(n,k[:150])
