import re,sys,collections
path,comm=sys.argv[1],sys.argv[2]
rx=re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
enter=None;seq=[];st={};nested=collections.Counter();cnt=collections.Counter()
for ln in open(path,errors='replace'):
    m=rx.match(ln)
    if not m: continue
    c,p,t,e,a=m.group(1).strip(),int(m.group(2)),float(m.group(4)),m.group(5),m.group(6)
    for k in ('softirq','irq_handler','local_timer'):
        if e==k+'_entry': st[k]=t
        elif e==k+'_exit' and k in st:
            if enter: nested[k]+=t-st[k]; cnt[k]+=1
            del st[k]
    if e=='hrtimer_expire_entry' and enter: cnt['hrt:'+a.split('function=')[-1][:30]]+=1
    if not c.startswith(comm): continue
    if e=='sys_enter' and not a.startswith('NR 24 '):
        nr=int(a.split()[1]); enter=(p,nr,t,a); nested=collections.Counter(); cnt=collections.Counter()
    elif e=='sys_exit' and enter and enter[0]==p:
        seq.append((enter[1],(t-enter[2])*1e6,enter[3],dict(nested),dict(cnt))); enter=None
rows=collections.defaultdict(list)
for i in range(len(seq)-4):
    a,b,c_,d,e_=seq[i:i+5]
    if a[0]==16 and b[0]==1 and ', c, ' in b[2] and c_[0]==16 and d[0]==11 and e_[0]==11:
        for name,x in (('MODIFY(ERR)',a),('DESTROY_QP',c_),('munmap1',d),('munmap2',e_)): rows[name].append(x)
med=lambda x: sorted(x)[len(x)//2]
for name,xs in rows.items():
    raw=[x[1] for x in xs]; irq=[x[3].get('irq_handler',0)*1e6 for x in xs]; sirq=[x[3].get('softirq',0)*1e6 for x in xs]; tim=[x[3].get('local_timer',0)*1e6 for x in xs]
    net=[x[1]-(x[3].get('irq_handler',0)+x[3].get('softirq',0)+x[3].get('local_timer',0))*1e6 for x in xs]
    c=collections.Counter();[c.update(x[4]) for x in xs]
    print('%s %-11s n=%d raw med %.0f sum %.1f ms | nested: hardirq %.1f ms, softirq %.1f ms, timer irq %.1f ms | rest med %.0f sum %.1f ms | %s'%(comm,name,len(xs),med(raw),sum(raw)/1e3,sum(irq)/1e3,sum(sirq)/1e3,sum(tim)/1e3,med(net),sum(net)/1e3,dict(c.most_common(4))))
