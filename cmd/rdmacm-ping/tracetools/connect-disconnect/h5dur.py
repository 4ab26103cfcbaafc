import re,sys,statistics
path,comm,nr,t0s,t1s=sys.argv[1],sys.argv[2],sys.argv[3],None,None
rx=re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
enter={};d=[];dirty=[]
for ln in open(path,errors='replace'):
    m=rx.match(ln)
    if not m: continue
    c,p,fl,t,e,a=m.group(1).strip(),int(m.group(2)),m.group(3),float(m.group(4)),m.group(5),m.group(6)
    if not c.startswith(comm): 
        if e in('softirq_entry',) : pass
        continue
    if e=='sys_enter' and a.startswith('NR %s '%nr): enter[p]=t
    elif e=='sys_exit' and a.startswith('NR %s '%nr) and p in enter: d.append((t-enter.pop(p))*1e6)
d.sort(); n=len(d)
print(comm,nr,n,'min %.0f p25 %.0f med %.0f p75 %.0f'%(d[0],d[n//4],d[n//2],d[3*n//4]))
