import re,sys
path,comm=sys.argv[1],sys.argv[2]
rx=re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
prev=None;enter=None;seq=[]
for ln in open(path,errors='replace'):
    m=rx.match(ln)
    if not m: continue
    c,p,t,e,a=m.group(1).strip(),int(m.group(2)),float(m.group(4)),m.group(5),m.group(6)
    if not c.startswith(comm): continue
    if e=='sys_enter' and not a.startswith('NR 24 '):
        nr=int(a.split()[1]); enter=(p,nr,t)
    elif e=='sys_exit' and enter and enter[0]==p:
        seq.append((enter[1],(t-enter[2])*1e6)); enter=None
first=[];second=[]
for i,(nr,d) in enumerate(seq):
    if nr==11:
        if i>0 and seq[i-1][0]==11: second.append(d)
        else: first.append(d)
med=lambda x: sorted(x)[len(x)//2] if x else 0
print(comm,'first munmap n=%d med %.0f; second n=%d med %.0f'%(len(first),med(first),len(second),med(second)))
