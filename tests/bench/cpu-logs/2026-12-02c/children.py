import collections,sys
f,target=sys.argv[1],sys.argv[2]
ch=collections.Counter(); tot=0
for line in open(f):
    stack,n=line.rsplit(' ',1); n=int(n); fr=stack.split(';')
    for i,x in enumerate(fr):
        if x.startswith(target):
            tot+=n; ch[fr[i+1] if i+1<len(fr) else '<self>']+=n; break
print(target,tot)
for k,n in ch.most_common(25): print(' ',n,k[:140])
