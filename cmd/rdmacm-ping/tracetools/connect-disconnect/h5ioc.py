import re,sys
path,comm=sys.argv[1],sys.argv[2]
rx=re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
enter=None;seq=[];sst=None;sirq=0
for ln in open(path,errors='replace'):
    m=rx.match(ln)
    if not m: continue
    c,p,t,e,a=m.group(1).strip(),int(m.group(2)),float(m.group(4)),m.group(5),m.group(6)
    if e=='softirq_entry': sst=t
    elif e=='softirq_exit' and sst is not None:
        if enter: sirq+=t-sst
        sst=None
    if not c.startswith(comm): continue
    if e=='sys_enter' and not a.startswith('NR 24 '):
        nr=int(a.split()[1]); enter=(p,nr,t,a); sirq=0
    elif e=='sys_exit' and enter and enter[0]==p:
        seq.append((enter[1],(t-enter[2]-sirq)*1e6,enter[3],t)); enter=None
# disconnect: pattern ioctl, write(len c), ioctl, munmap
mod=[];dst=[];gap=[]
for i in range(len(seq)-3):
    a,b,c_,d=seq[i:i+4]
    if a[0]==16 and b[0]==1 and ', c, ' in b[2] and c_[0]==16 and d[0]==11:
        mod.append(a[1]); dst.append(c_[1])
med=lambda x: sorted(x)[len(x)//2]
print(comm,'n=%d MODIFY(ERR) med %.0f us sum %.1f ms; DESTROY_QP med %.0f us sum %.1f ms'%(len(mod),med(mod),sum(mod)/1e3,med(dst),sum(dst)/1e3))
